# sandbox anchors #9: a NaN reward.
class NanEnv:
    def reset(self, seed=None):
        return "start", {}

    def step(self, action):
        return "obs", float("nan"), False, False, {}
