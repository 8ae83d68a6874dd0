# Anchor 10: reset returns three values.
class ResetThreeEnv:
    def reset(self, seed=None):
        return "go", {}, 42

    def step(self, action):
        return "x", 0.0, False, False, {}
