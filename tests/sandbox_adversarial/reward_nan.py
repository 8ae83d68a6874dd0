# Anchor 9: NaN reward.
class NanEnv:
    def reset(self, seed=None):
        return "go", {}

    def step(self, action):
        return "x", float("nan"), False, False, {}
