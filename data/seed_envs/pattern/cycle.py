import random
import re

def parse(action):
    m = re.findall(r"\\boxed\{([^{}]*)\}", str(action))
    return m[-1].strip() if m else str(action).strip()

class CycleEnv:
    def __init__(self, max_turns=4, **kwargs):
        self.max_turns = max_turns
        self.reset()

    def reset(self, seed=None):
        self.rng = random.Random(0 if seed is None else seed)
        self.turn = 0
        block = self.rng.sample("ABCD", 2) + [self.rng.choice("ABCD") for _ in range(self.rng.randint(1, 2))]
        self.n = self.rng.randint(20, 99)
        self.ans = block[(self.n - 1) % len(block)]
        return f"A pattern repeats forever: {' '.join(block * 3)} ... What is symbol number {self.n}?", {}

    def step(self, action):
        self.turn += 1
        a = parse(action).upper()
        if a not in ("A", "B", "C", "D"):
            return "Invalid: answer A, B, C or D.", 0.0, False, self.turn >= self.max_turns, {}
        if a == self.ans:
            return "Correct!", 1.0, True, False, {"turn": self.turn}
        return "Wrong.", 0.0, True, False, {"turn": self.turn}

    def solution(self):
        return [self.ans]
