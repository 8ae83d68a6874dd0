import random
import re

def parse(action):
    m = re.findall(r"\\boxed\{([^{}]*)\}", str(action))
    return m[-1].strip() if m else str(action).strip()

class StaircaseEnv:
    def __init__(self, max_turns=3, **kwargs):
        self.max_turns = max_turns
        self.reset()

    def reset(self, seed=None):
        self.rng = random.Random(0 if seed is None else seed)
        self.turn = 0
        self.step_size, self.first = self.rng.randint(1, 5), self.rng.randint(1, 5)
        seq, k = [], 1
        while len(seq) < 80:
            seq += [self.first + (k - 1) * self.step_size] * k
            k += 1
        self.n = self.rng.randint(16, 70)
        self.ans = seq[self.n - 1]
        return (f"A sequence: {', '.join(map(str, seq[:10]))}, ... (the k-th value appears k times). "
                f"What is term number {self.n}?"), {}

    def step(self, action):
        self.turn += 1
        t = self.turn >= self.max_turns
        a = parse(action)
        if not re.fullmatch(r"-?\d{1,9}", a):
            return "Invalid: answer an integer.", 0.0, False, t, {}
        if int(a) == self.ans:
            return "Correct!", 1.0, True, False, {"turn": self.turn}
        return f"Wrong: {a} is {'too big' if int(a) > self.ans else 'too small'}.", 0.0, False, t, {"turn": self.turn}

    def solution(self):
        return [str(self.ans)]
