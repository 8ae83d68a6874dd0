import random
import re

def parse(action):
    m = re.findall(r"\\boxed\{([^{}]*)\}", str(action))
    return m[-1].strip() if m else str(action).strip()

class GcdEnv:
    def __init__(self, max_turns=6, **kwargs):
        self.max_turns = max_turns
        self.reset()

    def reset(self, seed=None):
        self.rng = random.Random(0 if seed is None else seed)
        self.turn = 0
        g = self.rng.randint(2, 12)
        x, y = self.rng.sample([2, 3, 4, 5, 7, 9, 11], 2)
        self.a, self.b, self.ans = g * x, g * y, g
        return f"Find the greatest common divisor gcd({self.a}, {self.b}).", {}

    def step(self, action):
        self.turn += 1
        a = parse(action)
        t = self.turn >= self.max_turns
        if not re.fullmatch(r"\d{1,9}", a):
            return "Invalid: answer with a positive integer.", 0.0, False, t, {}
        v = int(a)
        if v == self.ans:
            return "Correct!", 1.0, True, False, {"turn": self.turn}
        if v > 0 and self.a % v == 0 and self.b % v == 0:
            return f"{v} divides both, but it is not the greatest.", 0.0, False, t, {}
        return f"{v} does not divide both numbers.", 0.0, False, t, {}

    def solution(self):
        return [str(self.ans)]
