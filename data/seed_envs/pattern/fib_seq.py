import random
import re

def parse(action):
    m = re.findall(r"\\boxed\{([^{}]*)\}", str(action))
    return m[-1].strip() if m else str(action).strip()

class FibSeqEnv:
    def __init__(self, max_turns=8, **kwargs):
        self.max_turns = max_turns
        self.reset()

    def reset(self, seed=None):
        self.rng = random.Random(0 if seed is None else seed)
        self.turn = 0
        self.seq = [self.rng.randint(1, 6), self.rng.randint(1, 6)]
        while len(self.seq) < 7:
            self.seq.append(self.seq[-1] + self.seq[-2])
        self.shown = 4
        return f"Each term is the sum of the two before it: {self.show()} Give the next term; I will ask 3 times.", {}

    def show(self):
        return ", ".join(map(str, self.seq[:self.shown])) + ", ?"

    def step(self, action):
        self.turn += 1
        t = self.turn >= self.max_turns
        a = parse(action)
        if not re.fullmatch(r"-?\d{1,9}", a):
            return "Invalid: answer with an integer.", 0.0, False, t, {}
        if self.shown >= len(self.seq) or int(a) != self.seq[self.shown]:
            return f"Wrong. Sequence: {self.show()}", 0.0, False, t, {}
        self.shown += 1
        if self.shown == len(self.seq):
            return "Correct! Sequence complete.", 1.0, True, False, {"turn": self.turn}
        return f"Correct. Now: {self.show()}", 0.0, False, t, {"turn": self.turn}

    def solution(self):
        return [str(x) for x in self.seq[self.shown:]]
