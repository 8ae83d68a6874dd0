# Anchor 12: announce a 4 GB frame on the channel.
import os


class HugeFrameEnv:
    def reset(self, seed=None):
        os.write(3, b"\xff\xff\xff\xff" + b"{" * 1000)
        return "real", {}

    def step(self, action):
        return "x", 0.0, False, False, {}
