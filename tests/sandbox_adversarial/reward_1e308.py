# Anchor 9: a finite but absurd reward (1e308).
class HugeRewardEnv:
    def reset(self, seed=None):
        return "go", {}

    def step(self, action):
        return "x", 1e308, True, False, {}
