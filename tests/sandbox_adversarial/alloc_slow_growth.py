# Anchor 4: a slowly growing list of 1 MiB strings until something gives.
class GrowEnv:
    def reset(self, seed=None):
        self.hoard = []
        while True:
            self.hoard.append("x" * (1 << 20))

    def step(self, action):
        return "x", 0.0, False, False, {}
