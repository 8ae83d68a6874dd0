# Anchor 13: SystemExit from reset.
import sys


class ExitEnv:
    def reset(self, seed=None):
        sys.exit(0)

    def step(self, action):
        return "x", 0.0, False, False, {}
