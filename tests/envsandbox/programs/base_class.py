# Two *Env classes: the loader skips BaseEnv because MazeEnv derives from it (reference §2 "excluding
# base classes") and passes max_turns = min(40, 25) = 25.
class BaseEnv:
    def __init__(self, max_turns=10):
        raise RuntimeError("abstract")

class MazeEnv(BaseEnv):
    def __init__(self, max_turns=40):
        self.max_turns = max_turns

    def reset(self, seed=None):
        return f"maze with {self.max_turns} turns", {}

    def step(self, action):
        return "obs", 0.0, False, False, {}
