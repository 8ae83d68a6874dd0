# Anchor 15: the global RNG, never seeded: not reproducible across reseeded processes.
import random as global_random


class RandomEnv:
    def reset(self, seed=None):
        self.secret = global_random.randint(0, 10**9)
        return "guess", {}

    def step(self, action):
        return "it was %d" % self.secret, 0.0, True, False, {}
