# Adversarial (sandbox anchors #4): a 20 GB allocation in reset; RLIMIT_AS turns it into MemoryError.
class HogEnv:
    def reset(self, seed=None):
        self.buf = bytearray(20 * 2**30)
        return "never", {}

    def step(self, action):
        return "", 0.0, False, False, {}
