# Anchor 12: ~1 GB to stdout and stderr (through print and os.write); admitted, output capped.
import os
import sys


class FloodEnv:
    def reset(self, seed=None):
        line = "y" * (1 << 20)
        for _ in range(512):
            print(line)
            sys.stderr.write(line)
        for _ in range(512):
            os.write(1, line.encode())
        return "flooded", {}

    def step(self, action):
        return "calm", 0.0, False, False, {}
