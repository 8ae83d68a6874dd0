# Reports what the sandbox lets a program see and do (tests/envsandbox/test_isolation.cpp). Each probe
# records "ok" or the exception type name; reset(seed) returns the report as info.
import os, socket, sys


def attempt(fn):
    try:
        fn()
        return "ok"
    except BaseException as e:  # noqa: BLE001 - the type is the answer
        return type(e).__name__


def _exec():
    os.execv("/bin/true", ["true"])


def _subprocess():
    import subprocess
    subprocess.run(["/bin/true"], check=True)


def _unshare():
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(0x10000000) != 0:  # CLONE_NEWUSER
        raise OSError(ctypes.get_errno(), "unshare")


def _write(path):
    with open(path, "w") as f:
        f.write("pwned")


class ProbeEnv:
    def reset(self, seed=None):
        info = {
            "uid": os.getuid(),
            "euid": os.geteuid(),
            "pid": os.getpid(),
            "ppid": os.getppid(),
            "cwd": os.getcwd(),
            "environ": sorted(os.environ.keys()),
            "hostname": socket.gethostname(),
            "fork": attempt(os.fork),
            "exec": attempt(_exec),
            "subprocess": attempt(_subprocess),
            "inet": attempt(lambda: socket.socket(socket.AF_INET, socket.SOCK_STREAM)),
            "inet6": attempt(lambda: socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)),
            "netlink": attempt(lambda: socket.socket(socket.AF_NETLINK, socket.SOCK_RAW)),
            "unix": attempt(lambda: socket.socket(socket.AF_UNIX, socket.SOCK_STREAM).close()),
            "kill_parent": attempt(lambda: os.kill(os.getppid(), 9)),
            "kill_all": attempt(lambda: os.kill(-1, 9)),
            "kill_init": attempt(lambda: os.kill(1, 0)),
            "kill_self_0": attempt(lambda: os.kill(os.getpid(), 0)),
            "unshare": attempt(_unshare),
            "write_usr": attempt(lambda: _write("/usr/spade_pwned")),
            "write_etc": attempt(lambda: _write("/etc/spade_pwned")),
            "write_cwd": attempt(lambda: _write("here.txt")),
            "read_passwd": attempt(lambda: open("/etc/passwd").read()),
            "read_shadow": attempt(lambda: open("/etc/shadow").read()),
            "proc_1_environ": attempt(lambda: open("/proc/1/environ").read()),
            "root_listing": sorted(os.listdir("/")),
            "thread": attempt(self._thread),
        }
        return "probe", info

    def _thread(self):
        import threading
        t = threading.Thread(target=lambda: None)
        t.start()
        t.join()

    def step(self, action):
        if action.startswith("kill "):
            return attempt(lambda: os.kill(int(action[5:]), 9)), 0.0, False, False, {}
        if action.startswith("read "):
            return attempt(lambda: open(action[5:]).read()), 0.0, False, False, {}
        if action.startswith("fill "):  # write N files of 15 MiB in the work dir
            wrote = 0
            try:
                for i in range(int(action[5:])):
                    with open("fill%d" % i, "wb") as f:
                        f.write(b"x" * (15 << 20))
                    wrote += 1
                return "wrote %d" % wrote, 0.0, False, False, {}
            except OSError as e:
                return "wrote %d then %s errno %d" % (wrote, type(e).__name__, e.errno), 0.0, False, False, {}
        if action.startswith("alloc "):  # touch N MiB
            s = "x" * (int(action[6:]) << 20)
            return "allocated %d" % len(s), 0.0, False, False, {}
        if action == "environ":
            return repr(dict(os.environ)), 0.0, False, False, {}
        return "?", 0.0, False, False, {}
