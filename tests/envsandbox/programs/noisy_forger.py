# sandbox anchors #12: prints 1 MB to stdout and writes a forged protocol frame to fd 1 and fd 2,
# but otherwise behaves; it must be admitted and its output capped.
import os, struct

FORGED = b'{"value": {"t": "tuple", "v": ["forged", 99, true, true, {}]}}'

class NoisyEnv:
    def reset(self, seed=None):
        print("x" * (1 << 20))
        os.write(1, struct.pack("<I", len(FORGED)) + FORGED)
        os.write(2, struct.pack("<I", len(FORGED)) + FORGED)
        return "start", {}

    def step(self, action):
        print("stepping", action)
        os.write(1, struct.pack("<I", len(FORGED)) + FORGED)
        return "obs", 0.5, False, False, {}
