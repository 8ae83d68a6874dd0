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
    os.unlink(path)


def _syscall(number, *args):
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.syscall(number, *args) < 0:
        raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))


def _fcntl_on_pipe(cmd, arg):
    import fcntl
    r, w = os.pipe()
    try:
        fcntl.fcntl(r, cmd, arg)
    finally:
        os.close(r)
        os.close(w)


def _shm():
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    shm = libc.shmget(0, 4096, 0o1600)  # IPC_PRIVATE, IPC_CREAT | 0600
    if shm < 0:
        raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
    libc.shmctl(shm, 0, None)  # IPC_RMID


def _cap_eff():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("CapEff:"):
                return line.split()[1]
    return "?"


# Calls aimed at another process (issue 24): the targets are harmless -- pid 2, which names no process
# of a pool with per-child namespaces and the zygote's first child without them, only read or set to
# the value it already has -- so a missing denial changes nothing.
OTHER = 2


def _ioprio():
    import ctypes
    return ctypes.CDLL(None).syscall(252, 1, 0)  # ioprio_get(IOPRIO_WHO_PROCESS, self)


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
            "dev_listing": sorted(os.listdir("/dev")),
            "proc_pids": sorted(int(n) for n in os.listdir("/proc") if n.isdigit()),
            "write_root": attempt(lambda: _write("/spade_probe")),
            "write_dev": attempt(lambda: _write("/dev/spade_probe")),
            "write_dev_shm": attempt(lambda: _write("/dev/shm/spade_probe")),
            "write_tmp": attempt(lambda: _write("/tmp/spade_probe")),
            "caps": _cap_eff(),
            "shmget": attempt(_shm),
            "prlimit_other": attempt(lambda: __import__("resource").prlimit(OTHER, __import__("resource").RLIMIT_NOFILE)),
            "setpriority_other": attempt(lambda: os.setpriority(os.PRIO_PROCESS, OTHER, os.getpriority(os.PRIO_PROCESS, 0))),
            "setpriority_user": attempt(lambda: os.setpriority(os.PRIO_USER, os.getuid(), os.getpriority(os.PRIO_PROCESS, 0))),
            "affinity_other": attempt(lambda: os.sched_setaffinity(OTHER, os.sched_getaffinity(0))),
            "ioprio_user": attempt(lambda: _syscall(251, 3, os.getuid(), _ioprio())),
            "pidfd_signal_self": attempt(lambda: _syscall(424, os.open("/proc/self", os.O_RDONLY), 0, None, 0)),
            "f_setown": attempt(lambda: _fcntl_on_pipe(8, os.getpid())),
            "f_setsig": attempt(lambda: _fcntl_on_pipe(10, 0)),
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
