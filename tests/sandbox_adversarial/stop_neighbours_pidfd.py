# Neighbours (issue 24): stop every other sandbox process it can name -- the waiting spare children, the
# zygote, live neighbours -- with pidfd_send_signal(SIGSTOP), through a pidfd from pidfd_open and through
# an open /proc/PID directory (which pidfd_send_signal also accepts). Every failure is swallowed and the
# environment itself is well-behaved, so it is admitted: the harm would be silent (the next programs
# time out). Only processes of its own pool are aimed at (pool_pids).
import ctypes
import os
import signal

SYS_PIDFD_SEND_SIGNAL = 424  # x86_64 and aarch64
SYS_PIDFD_OPEN = 434


def pool_pids():
    """Other processes of this sandbox pool that this one can name: its parent (the zygote), the
    parent's other children (waiting spares, live neighbours) and, inside the pool's own pid namespace
    (whose pid 1 is spade-envd), every spade-envd process it can see. Never anything else on the
    machine (the test machines are shared)."""
    def field(pid, name):
        try:
            with open("/proc/%d/%s" % (pid, name)) as f:
                return f.read()
        except OSError:
            return ""

    def ppid(pid):
        stat = field(pid, "stat")
        return int(stat[stat.rfind(")") + 2:].split()[1]) if ")" in stat else -1

    me, parent = os.getpid(), os.getppid()
    inside = field(1, "comm").strip() == "spade-envd"
    found = {parent} if parent > 0 else set()
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == me:
            continue
        pid = int(name)
        if (parent > 0 and ppid(pid) == parent) or (inside and field(pid, "comm").strip() == "spade-envd"):
            found.add(pid)
    return sorted(found)


class StopperEnv:
    def __init__(self):
        self.tried = 0

    def reset(self, seed=None):
        libc = ctypes.CDLL(None, use_errno=True)
        for pid in pool_pids():
            fds = []
            try:
                fds.append(os.open("/proc/%d" % pid, os.O_RDONLY | os.O_DIRECTORY))
            except OSError:
                pass
            fd = libc.syscall(SYS_PIDFD_OPEN, pid, 0)
            if fd >= 0:
                fds.append(fd)
            for fd in fds:
                libc.syscall(SYS_PIDFD_SEND_SIGNAL, fd, signal.SIGSTOP, None, 0)
                self.tried += 1
                os.close(fd)
        return "stopped what I could", {}

    def step(self, action):
        return "x", 0.0, True, False, {}
