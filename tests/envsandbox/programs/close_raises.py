# close() raises on the second call (contract gate close: close_exception).
class ClosingEnv:
    def __init__(self):
        self.closed = False

    def reset(self, seed=None):
        return "Hello.", {}

    def step(self, action):
        return "Bye.", 0.0, True, False, {}

    def close(self):
        if self.closed:
            raise RuntimeError("already closed")
        self.closed = True
