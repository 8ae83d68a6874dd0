import random
import re

def parse(action):
    m = re.findall(r"\\boxed\{([^{}]*)\}", str(action))
    return m[-1].strip() if m else str(action).strip()

class ParabolaEnv:
    def __init__(self, max_turns=6, **kwargs):
        self.max_turns = max_turns
        self.reset()

    def reset(self, seed=None):
        self.rng = random.Random(0 if seed is None else seed)
        self.turn = 0
        self.a, self.h, self.k = self.rng.randint(1, 3), self.rng.randint(-9, 9), self.rng.randint(0, 9)
        b, c = -2 * self.a * self.h, self.a * self.h ** 2 + self.k
        return f"f(x) = {self.a}x^2 {'+' if b >= 0 else '-'} {abs(b)}x + {c}. Which integer x makes f(x) smallest?", {}

    def step(self, action):
        self.turn += 1
        a = parse(action).replace("x=", "")
        if a == str(self.h):
            return "Correct!", 1.0, True, False, {"turn": self.turn}
        ok = re.fullmatch(r"-?\d{1,9}", a)
        msg = f"f({a}) = {self.a * (int(a) - self.h) ** 2 + self.k}. A smaller value exists." if ok else "Invalid: answer an integer."
        return msg, 0.0, False, self.turn >= self.max_turns, {"turn": self.turn}

    def solution(self):
        return [str(self.h)]
