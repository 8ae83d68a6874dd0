# Anchor 3: catastrophic regex backtracking: one C call for ~forever.
class RegexEnv:
    def reset(self, seed=None):
        re.match(r"(a+)+$", "a" * 64 + "b")
        return "done", {}

    def step(self, action):
        return "x", 0.0, False, False, {}
