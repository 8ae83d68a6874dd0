import random
import re

def parse(action):
    m = re.findall(r"\\boxed\{([^{}]*)\}", str(action))
    return m[-1].strip() if m else str(action).strip()

class CodeBreakEnv:
    def __init__(self, max_turns=10, **kwargs):
        self.max_turns = max_turns
        self.reset()

    def reset(self, seed=None):
        self.rng = random.Random(0 if seed is None else seed)
        self.turn = 0
        self.code = "".join(self.rng.choice("1234") for _ in range(3))
        return "Guess my 3-digit code (digits 1-4). After each guess I say how many digits are in place or misplaced.", {}

    def step(self, action):
        self.turn += 1
        a = parse(action).replace(" ", "")
        t = self.turn >= self.max_turns
        if not re.fullmatch(r"[1-4]{3}", a):
            return "Invalid: guess three digits from 1 to 4, e.g. 312.", 0.0, False, t, {}
        if a == self.code:
            return "Correct!", 1.0, True, False, {"turn": self.turn}
        hits = sum(x == y for x, y in zip(a, self.code))
        common = sum(min(a.count(d), self.code.count(d)) for d in "1234")
        return f"{hits} in place, {common - hits} misplaced.", 0.0, False, t, {}

    def solution(self):
        return [self.code]
