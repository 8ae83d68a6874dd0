# Anchor 15: the observation depends on time.time().
import time


class ClockEnv:
    def reset(self, seed=None):
        return "go", {}

    def step(self, action):
        return "now %.9f" % time.time(), 0.0, False, False, {}
