import random
import re

def parse(action):
    m = re.findall(r"\\boxed\{([^{}]*)\}", str(action))
    return m[-1].strip() if m else str(action).strip()

class ModSumEnv:
    def __init__(self, max_turns=4, **kwargs):
        self.max_turns = max_turns
        self.reset()

    def reset(self, seed=None):
        self.rng = random.Random(0 if seed is None else seed)
        self.turn = 0
        a, b = self.rng.randint(10, 99), self.rng.randint(10, 99)
        m = self.rng.randint(3, 12)
        self.ans = (a + b) % m
        return f"Compute ({a} + {b}) mod {m}. Answer with one integer.", {}

    def step(self, action):
        self.turn += 1
        if parse(action) == str(self.ans):
            return "Correct!", 1.0, True, False, {"turn": self.turn}
        return "Wrong. Try again.", 0.0, False, self.turn >= self.max_turns, {"turn": self.turn}

    def solution(self):
        return [str(self.ans)]
