# Reports truncated=True on the very first step of an episode (contract gate: truncated_first_step).
class ShortEnv:
    def reset(self, seed=None):
        return "Say anything.", {}

    def step(self, action):
        return "ok", 0.0, False, True, {}
