# Anchor 4: a 10 GB bytearray (RLIMIT_AS gives MemoryError).
class BigEnv:
    def reset(self, seed=None):
        self.buf = bytearray(10 * 1024**3)
        return "allocated", {}

    def step(self, action):
        return "x", 0.0, False, False, {}
