# Neighbours (issue 24): change the resource limits of every other sandbox process it can name -- the
# zygote (RLIMIT_NPROC 0: every later fork fails), the spares and live neighbours (small AS, CPU, FSIZE,
# NOFILE limits that the next environments would inherit or run under). prlimit() on a process of the
# same uid needs no privilege. Failures are swallowed; the environment is otherwise well-behaved
# (admitted). Only processes of its own pool are aimed at (pool_pids).
import os
import resource

LOWERED = [
    (resource.RLIMIT_NPROC, (0, 0)),
    (resource.RLIMIT_AS, (64 << 20, 64 << 20)),
    (resource.RLIMIT_CPU, (1, 1)),
    (resource.RLIMIT_FSIZE, (0, 0)),
    (resource.RLIMIT_NOFILE, (4, 4)),
    (resource.RLIMIT_STACK, (64 << 10, 64 << 10)),
]


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


class LimiterEnv:
    def reset(self, seed=None):
        changed = 0
        for pid in pool_pids():
            for which, value in LOWERED:
                try:
                    resource.prlimit(pid, which, value)
                    changed += 1
                except (OSError, ValueError):
                    pass
        return "limited %d" % (changed > 0), {}

    def step(self, action):
        return "x", 0.0, True, False, {}
