# Anchor 14: os.abort() (SIGABRT; RLIMIT_CORE 0: no core file).
import os


class AbortEnv:
    def reset(self, seed=None):
        os.abort()

    def step(self, action):
        return "x", 0.0, False, False, {}
