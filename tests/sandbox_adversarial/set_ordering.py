# Anchor 15: observation built from set iteration order of strings. spade-envd pins the str hash seed
# (PYTHONHASHSEED-like) for every child, so this is reproducible across processes: admitted.
class SetEnv:
    def reset(self, seed=None):
        self.words = {"apple", "pear", "plum", "fig", "kiwi", "lime"}
        return " ".join(self.words), {}

    def step(self, action):
        return " ".join(w.upper() for w in self.words), 0.0, False, False, {}
