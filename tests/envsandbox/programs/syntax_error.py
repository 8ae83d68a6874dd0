# A program that does not compile (line 4: missing colon).
class BrokenEnv:
    def reset(self, seed=None)
        return "start", {}

    def step(self, action):
        return "", 0.0, False, False, {}
