# Anchor 11: a reward whose __eq__/__float__/__hash__ sleep.
import time


class Sleeper(float):
    def __eq__(self, other):
        time.sleep(3600)

    def __float__(self):
        time.sleep(3600)
        return 0.0

    __hash__ = None


class EqEnv:
    def reset(self, seed=None):
        return "go", {}

    def step(self, action):
        return "x", Sleeper(0.0), False, False, {}
