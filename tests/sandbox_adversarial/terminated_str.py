# Anchor 9: "False" (a str) as terminated.
class StrFlagEnv:
    def reset(self, seed=None):
        return "go", {}

    def step(self, action):
        return "x", 0.0, "False", False, {}
