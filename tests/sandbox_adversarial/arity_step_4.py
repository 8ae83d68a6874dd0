# Anchor 10: the old gym 4-tuple.
class FourEnv:
    def reset(self, seed=None):
        return "go", {}

    def step(self, action):
        return "x", 0.0, False, {}
