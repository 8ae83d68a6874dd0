# sandbox anchors #9: "False" (a str) as terminated.
class StrFlagEnv:
    def reset(self, seed=None):
        return "start", {}

    def step(self, action):
        return "obs", 0.0, "False", False, {}
