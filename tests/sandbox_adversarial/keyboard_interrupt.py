# Anchor 13: KeyboardInterrupt from step.
class InterruptEnv:
    def reset(self, seed=None):
        return "go", {}

    def step(self, action):
        raise KeyboardInterrupt()
