# Anchor 4: a 2 GB observation.
class HugeObsEnv:
    def reset(self, seed=None):
        return "o" * (2 * 1024**3), {}

    def step(self, action):
        return "x", 0.0, False, False, {}
