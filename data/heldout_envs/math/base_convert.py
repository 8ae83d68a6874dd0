import random
import re

def parse(action):
    m = re.findall(r"\\boxed\{([^{}]*)\}", str(action))
    return m[-1].strip() if m else str(action).strip()

def to_base(n, b):
    digits = ""
    while n:
        digits, n = str(n % b) + digits, n // b
    return digits or "0"

class BaseConvertEnv:
    def __init__(self, max_turns=4, **kwargs):
        self.max_turns = max_turns
        self.reset()

    def reset(self, seed=None):
        self.rng = random.Random(0 if seed is None else seed)
        self.turn = 0
        self.base = self.rng.choice([2, 3, 4, 5, 6, 7, 8, 9])
        self.n = self.rng.randint(self.base ** 2, min(255, self.base ** 4 - 1))
        if self.rng.random() < 0.5:
            self.to_dec, self.ans = False, to_base(self.n, self.base)
            return f"Write the decimal number {self.n} in base {self.base}. Answer only the base-{self.base} digits.", {}
        self.to_dec, self.ans = True, str(self.n)
        return f"The base-{self.base} number {to_base(self.n, self.base)} is what in decimal? Answer a decimal integer.", {}

    def step(self, action):
        self.turn += 1
        t = self.turn >= self.max_turns
        a = parse(action).replace(" ", "").lstrip("0") or "0"
        if self.to_dec:
            if not re.fullmatch(r"\d{1,9}", a):
                return "Invalid: answer a decimal integer.", 0.0, False, t, {}
            if a == self.ans:
                return "Correct!", 1.0, True, False, {"turn": self.turn}
            return f"Wrong: {a} in base {self.base} would be {to_base(int(a), self.base)}.", 0.0, False, t, {"turn": self.turn}
        if not re.fullmatch(r"\d{1,12}", a) or any(int(d) >= self.base for d in a):
            return f"Invalid: answer digits 0 to {self.base - 1}.", 0.0, False, t, {}
        if a == self.ans:
            return "Correct!", 1.0, True, False, {"turn": self.turn}
        value = int(a, self.base)
        return f"Wrong: {a} in base {self.base} is {value} in decimal, not {self.n}.", 0.0, False, t, {"turn": self.turn}

    def solution(self):
        return [self.ans]
