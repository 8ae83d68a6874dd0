import math
import random
import re

def parse(action):
    m = re.findall(r"\\boxed\{([^{}]*)\}", str(action))
    return m[-1].strip() if m else str(action).strip()

class LcmEnv:
    def __init__(self, max_turns=6, **kwargs):
        self.max_turns = max_turns
        self.reset()

    def reset(self, seed=None):
        self.rng = random.Random(0 if seed is None else seed)
        self.turn = 0
        self.a, self.b = self.rng.sample(range(2, 16), 2)
        self.ans = self.a * self.b // math.gcd(self.a, self.b)
        return f"Find the least common multiple lcm({self.a}, {self.b}).", {}

    def step(self, action):
        self.turn += 1
        a = parse(action)
        t = self.turn >= self.max_turns
        if not re.fullmatch(r"\d{1,9}", a):
            return "Invalid: answer with a positive integer.", 0.0, False, t, {}
        v = int(a)
        if v == self.ans:
            return "Correct!", 1.0, True, False, {"turn": self.turn}
        if v > 0 and v % self.a == 0 and v % self.b == 0:
            return f"{v} is a common multiple, but not the least.", 0.0, False, t, {}
        return f"{v} is not a multiple of both numbers.", 0.0, False, t, {}

    def solution(self):
        return [str(self.ans)]
