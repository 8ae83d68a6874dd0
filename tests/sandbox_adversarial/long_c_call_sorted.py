# Anchor 3: sorted(3e7) and a huge join: seconds in C, then memory. Either limit must end it.
class SortEnv:
    def reset(self, seed=None):
        data = sorted(range(3 * 10**7), key=lambda x: -x)
        return "".join(str(x) for x in data), {}

    def step(self, action):
        return "x", 0.0, False, False, {}
