import random
import re

def parse(action):
    m = re.findall(r"\\boxed\{([^{}]*)\}", str(action))
    return m[-1].strip() if m else str(action).strip()

class LastDigitEnv:
    def __init__(self, max_turns=2, **kwargs):
        self.max_turns = max_turns
        self.reset()

    def reset(self, seed=None):
        self.rng = random.Random(0 if seed is None else seed)
        self.turn = 0
        while True:
            self.a, self.b = self.rng.randint(2, 29), self.rng.randint(11, 99)
            if self.a % 10 not in (0, 1, 5, 6):
                break
        self.ans = str(pow(self.a, self.b, 10))
        return f"What is the last digit of {self.a}^{self.b}? Two tries: answer one digit.", {}

    def step(self, action):
        self.turn += 1
        t = self.turn >= self.max_turns
        a = parse(action)
        if not re.fullmatch(r"\d", a):
            return "Invalid: answer one digit 0-9.", 0.0, False, t, {}
        if a == self.ans:
            return "Correct!", 1.0, True, False, {"turn": self.turn}
        return "Wrong.", 0.0, False, t, {"turn": self.turn}

    def solution(self):
        return [self.ans]
