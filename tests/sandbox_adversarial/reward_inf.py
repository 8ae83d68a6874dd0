# Anchor 9: infinite reward.
class InfEnv:
    def reset(self, seed=None):
        return "go", {}

    def step(self, action):
        return "x", float("inf"), True, False, {}
