import random
import re

def parse(action):
    m = re.findall(r"\\boxed\{([^{}]*)\}", str(action))
    return m[-1].strip() if m else str(action).strip()

class QuadSeqEnv:
    def __init__(self, max_turns=5, **kwargs):
        self.max_turns = max_turns
        self.reset()

    def reset(self, seed=None):
        self.rng = random.Random(0 if seed is None else seed)
        self.turn = 0
        a, b, c = self.rng.randint(1, 3), self.rng.randint(-3, 3), self.rng.randint(-5, 5)
        seq = [a * n * n + b * n + c for n in range(1, 7)]
        self.ans = seq[-1]
        return f"The differences of differences are constant: {', '.join(map(str, seq[:5]))}, ? Give the next term.", {}

    def step(self, action):
        self.turn += 1
        a = parse(action)
        t = self.turn >= self.max_turns
        if not re.fullmatch(r"-?\d{1,9}", a):
            return "Invalid: answer with an integer.", 0.0, False, t, {}
        if int(a) == self.ans:
            return "Correct!", 1.0, True, False, {"turn": self.turn}
        return f"Wrong: {a} is {'too big' if int(a) > self.ans else 'too small'}.", 0.0, False, t, {}

    def solution(self):
        return [str(self.ans)]
