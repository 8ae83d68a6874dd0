# Anchor 13: os._exit(0) in the middle of reset (exits 0, no reply).
import os


class VanishEnv:
    def reset(self, seed=None):
        os._exit(0)

    def step(self, action):
        return "x", 0.0, False, False, {}
