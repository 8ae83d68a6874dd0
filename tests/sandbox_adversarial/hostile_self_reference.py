# Anchor 11: a self-referential list inside info.
class LoopEnv:
    def reset(self, seed=None):
        return "go", {}

    def step(self, action):
        loop = []
        loop.append(loop)
        return "x", 0.0, False, False, {"loop": loop}
