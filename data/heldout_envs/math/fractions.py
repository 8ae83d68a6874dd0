import math
import random
import re

def parse(action):
    m = re.findall(r"\\boxed\{([^{}]*)\}", str(action))
    return m[-1].strip() if m else str(action).strip()

class FractionAddEnv:
    def __init__(self, max_turns=4, **kwargs):
        self.max_turns = max_turns
        self.reset()

    def reset(self, seed=None):
        self.rng = random.Random(0 if seed is None else seed)
        self.turn = 0
        b, d = self.rng.sample([2, 3, 4, 5, 6, 8, 9, 10, 12], 2)
        a, c = self.rng.randint(1, b - 1), self.rng.randint(1, d - 1)
        self.op = self.rng.choice("+-")
        num = a * d + c * b if self.op == "+" else a * d - c * b
        g = math.gcd(abs(num), b * d)
        self.p, self.q = num // g, b * d // g
        return f"Compute {a}/{b} {self.op} {c}/{d}. Answer a fraction in lowest terms like 7/12 (or -7/12, or 2 if whole).", {}

    def step(self, action):
        self.turn += 1
        t = self.turn >= self.max_turns
        a = parse(action).replace(" ", "")
        frac = re.search(r"(-?)\\[dt]?frac\{(-?\d{1,9})\}\{(\d{1,9})\}", a)
        if frac:
            a = frac.group(1) + frac.group(2) + "/" + frac.group(3)
        a = a.replace("--", "")
        m = re.fullmatch(r"(-?\d{1,9})(?:/(\d{1,9}))?", a)
        if not m or (m.group(2) and int(m.group(2)) == 0):
            return "Invalid: answer a fraction like 7/12, or an integer.", 0.0, False, t, {}
        p, q = int(m.group(1)), int(m.group(2) or 1)
        if p * self.q != q * self.p:
            return f"Wrong value: {p}/{q} is {'too big' if p * self.q > q * self.p else 'too small'}.", 0.0, False, t, {"turn": self.turn}
        if math.gcd(abs(p), q) != 1:
            return "Right value, but not in lowest terms.", 0.0, False, t, {"turn": self.turn}
        return "Correct!", 1.0, True, False, {"turn": self.turn}

    def solution(self):
        return [str(self.p) if self.q == 1 else f"{self.p}/{self.q}"]
