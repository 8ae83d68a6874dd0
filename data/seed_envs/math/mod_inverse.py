import random
import re

def parse(action):
    m = re.findall(r"\\boxed\{([^{}]*)\}", str(action))
    return m[-1].strip() if m else str(action).strip()

class ModInverseEnv:
    def __init__(self, max_turns=6, **kwargs):
        self.max_turns = max_turns
        self.reset()

    def reset(self, seed=None):
        self.rng = random.Random(0 if seed is None else seed)
        self.turn = 0
        self.p = self.rng.choice([5, 7, 11, 13, 17, 19, 23])
        self.a = self.rng.randint(2, self.p - 1)
        self.ans = next(x for x in range(1, self.p) if self.a * x % self.p == 1)
        return f"Find x in 1..{self.p - 1} with {self.a} * x = 1 (mod {self.p}).", {}

    def step(self, action):
        self.turn += 1
        a = parse(action)
        t = self.turn >= self.max_turns
        if not re.fullmatch(r"\d{1,9}", a):
            return "Invalid: answer with a positive integer.", 0.0, False, t, {}
        v = int(a)
        if v == self.ans:
            return "Correct!", 1.0, True, False, {"turn": self.turn}
        r = self.a * v % self.p
        return f"Wrong: {self.a} * {v} mod {self.p} = {r}, not 1.", 0.0, False, t, {}

    def solution(self):
        return [str(self.ans)]
