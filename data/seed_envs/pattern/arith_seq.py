import random
import re

def parse(action):
    m = re.findall(r"\\boxed\{([^{}]*)\}", str(action))
    return m[-1].strip() if m else str(action).strip()

class ArithSeqEnv:
    def __init__(self, max_turns=4, **kwargs):
        self.max_turns = max_turns
        self.reset()

    def reset(self, seed=None):
        self.rng = random.Random(0 if seed is None else seed)
        self.turn = 0
        a, d = self.rng.randint(-20, 20), self.rng.choice([-9, -7, -5, -3, -2, 2, 3, 4, 5, 6, 8])
        self.ans = a + 5 * d
        return "Next number? " + ", ".join(str(a + i * d) for i in range(5)) + ", ?", {}

    def step(self, action):
        self.turn += 1
        if parse(action) == str(self.ans):
            return "Correct!", 1.0, True, False, {"turn": self.turn}
        return "Wrong. Try again.", 0.0, False, self.turn >= self.max_turns, {"turn": self.turn}

    def solution(self):
        return [str(self.ans)]
