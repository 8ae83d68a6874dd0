# More: reach host services over AF_UNIX (docker, systemd, dbus) and the abstract namespace; failures
# are swallowed, so it is admitted; the test checks no connection was made.
import socket


class UnixEnv:
    def reset(self, seed=None):
        made = []
        for path in ["/var/run/docker.sock", "/run/systemd/private", "/run/dbus/system_bus_socket", "\0spade"]:
            try:
                s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                s.settimeout(0.5)
                s.connect(path)
                made.append(path)
            except OSError:
                pass
        print("connected:", made)
        return "connected to %d" % len(made), {}

    def step(self, action):
        return "x", 0.0, False, False, {}
