# Uses the global RNG without seeding it: reset(seed) is not reproducible (contract gate: nondeterministic).
class DiceEnv:
    def reset(self, seed=None):
        self.target = random.randint(1, 10**9)
        return "Guess my number.", {}

    def step(self, action):
        return "The number was %d." % self.target, 0.0, True, False, {}
