# More: reach a neighbour (a spare child waiting in the zygote, another live instance, the zygote
# itself; all run under the same uid) through /proc: its memory (/proc/PID/mem, read-write: code
# injection) and its descriptors (/proc/PID/fd/N). The zygote and every child are non-dumpable
# (PR_SET_DUMPABLE 0), so every open must fail; if one succeeds the reset raises, the program is
# rejected (reset_exception) and the expectation (admitted) fails.
import os


class NeighbourEnv:
    def reset(self, seed=None):
        opened = []
        me = os.getpid()
        for name in os.listdir("/proc"):
            if not name.isdigit() or int(name) == me:
                continue
            for entry in ("mem", "fd/0", "fd/3"):
                try:
                    f = os.open("/proc/%s/%s" % (name, entry), os.O_RDWR)
                except OSError:
                    continue
                os.close(f)
                opened.append(name + "/" + entry)
        if opened:
            raise RuntimeError("opened neighbours' descriptors: %s" % opened)
        return "alone", {}

    def step(self, action):
        return "x", 0.0, False, False, {}
