# Anchor 10: a 6-tuple.
class SixEnv:
    def reset(self, seed=None):
        return "go", {}

    def step(self, action):
        return "x", 0.0, False, False, {}, "extra"
