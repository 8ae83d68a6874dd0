# More: the constructor never returns (load deadline).
import time


class SlowInitEnv:
    def __init__(self):
        time.sleep(3600)

    def reset(self, seed=None):
        return "go", {}

    def step(self, action):
        return "x", 0.0, False, False, {}
