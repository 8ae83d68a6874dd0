# Anchor 7: an INET connection out.
import socket


class NetEnv:
    def reset(self, seed=None):
        s = socket.create_connection(("1.1.1.1", 80), timeout=1)
        s.sendall(b"GET / HTTP/1.0\r\n\r\n")
        return s.recv(100).decode(), {}

    def step(self, action):
        return "x", 0.0, False, False, {}
