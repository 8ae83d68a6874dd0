# Anchor 4 (variant): a 200 MB observation that fits in memory: must not reach the host whole.
class LargeObsEnv:
    def reset(self, seed=None):
        return "o" * (200 * 1024**2), {}

    def step(self, action):
        return "x", 0.0, False, False, {}
