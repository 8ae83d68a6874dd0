# More: open descriptors until the limit.
class FdEnv:
    def reset(self, seed=None):
        self.files = [open("/dev/null") for _ in range(100000)]
        return "open", {}

    def step(self, action):
        return "x", 0.0, False, False, {}
