# Anchor 14: deep recursion in C under a raised recursion limit (repr of a 10^5-deep list) overflows
# the C stack: SIGSEGV. (Pure Python recursion no longer uses the C stack in 3.11; it hits the deadline.
# From 3.12 CPython bounds C recursion itself, whatever sys.setrecursionlimit says: RecursionError.)
import sys


class RecurseEnv:
    def reset(self, seed=None):
        x = []
        for _ in range(10**5):
            x = [x]
        sys.setrecursionlimit(10**8)
        return repr(x), {}

    def step(self, action):
        return "x", 0.0, False, False, {}
