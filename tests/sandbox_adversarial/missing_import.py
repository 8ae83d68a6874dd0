# Anchor 15: a module that does not exist.
import definitely_not_a_module_spade


class MissingEnv:
    def reset(self, seed=None):
        return "go", {}

    def step(self, action):
        return "x", 0.0, False, False, {}
