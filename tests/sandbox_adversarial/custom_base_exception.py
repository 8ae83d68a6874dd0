# Anchor 13: a custom BaseException subclass with a hostile __str__.
class Escape(BaseException):
    def __str__(self):
        raise Escape()


class EscapeEnv:
    def reset(self, seed=None):
        raise Escape()

    def step(self, action):
        return "x", 0.0, False, False, {}
