# Wrong arity (sandbox anchors #10): step returns the old gym 4-tuple.
class OldGymEnv:
    def reset(self, seed=None):
        return "start", {}

    def step(self, action):
        return "obs", 0.0, False, {}
