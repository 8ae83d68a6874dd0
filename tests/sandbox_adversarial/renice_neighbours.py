# Neighbours (issue 24): change the scheduling of every other sandbox process it can name, and of the
# whole uid: nice 19 (setpriority on a pid, a process group and PRIO_USER), SCHED_IDLE, CPU affinity to
# one core, idle I/O priority (ioprio_set on a pid and IOPRIO_WHO_USER). Children forked later would
# inherit all of it. Failures are swallowed; the environment is otherwise well-behaved (admitted). Only
# processes of its own pool are aimed at (pool_pids); the uid-wide calls only inside the pool's own pid
# namespace, where they cannot reach another pool on a shared machine (without namespaces the isolation
# probe checks that seccomp refuses them, with harmless values).
import ctypes
import os

SYS_IOPRIO_SET = 251  # x86_64
IOPRIO_WHO_PROCESS, IOPRIO_WHO_PGRP, IOPRIO_WHO_USER = 1, 2, 3
IOPRIO_IDLE = 3 << 13


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


def attempt(fn, *args):
    try:
        fn(*args)
    except (OSError, ValueError, AttributeError):
        pass


class ReniceEnv:
    def reset(self, seed=None):
        libc = ctypes.CDLL(None, use_errno=True)
        for pid in pool_pids():
            attempt(os.setpriority, os.PRIO_PROCESS, pid, 19)
            attempt(os.setpriority, os.PRIO_PGRP, pid, 19)
            attempt(os.sched_setaffinity, pid, {0})
            attempt(os.sched_setscheduler, pid, os.SCHED_IDLE, os.sched_param(0))
            libc.syscall(SYS_IOPRIO_SET, IOPRIO_WHO_PROCESS, pid, IOPRIO_IDLE)
            libc.syscall(SYS_IOPRIO_SET, IOPRIO_WHO_PGRP, pid, IOPRIO_IDLE)
        # The whole uid: every process of it that this one can see (itself included, which is its own
        # business: its instance is thrown away after validation).
        if open("/proc/1/comm").read().strip() == "spade-envd":
            attempt(os.setpriority, os.PRIO_USER, os.getuid(), 19)
            libc.syscall(SYS_IOPRIO_SET, IOPRIO_WHO_USER, os.getuid(), IOPRIO_IDLE)
        return "reniced", {}

    def step(self, action):
        return "x", 0.0, True, False, {}
