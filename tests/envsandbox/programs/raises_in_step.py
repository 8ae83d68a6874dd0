# Raises on every step: the lenient wrapper (reference §3) turns it into ("Error: ...", -1.0, terminated).
class RaiseEnv:
    def reset(self, seed=None):
        return "start", {}

    def step(self, action):
        raise ValueError("bad move " + action)
