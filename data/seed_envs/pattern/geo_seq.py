import random
import re

def parse(action):
    m = re.findall(r"\\boxed\{([^{}]*)\}", str(action))
    return m[-1].strip() if m else str(action).strip()

class GeoSeqEnv:
    def __init__(self, max_turns=4, **kwargs):
        self.max_turns = max_turns
        self.reset()

    def reset(self, seed=None):
        self.rng = random.Random(0 if seed is None else seed)
        self.turn = 0
        a, r = self.rng.randint(1, 5), self.rng.choice([2, 3, -2, 4, 5, 10])
        terms = [a * r ** i for i in range(4)]
        self.ans = a * r ** 4
        return f"Each term is the previous one times a fixed ratio: {', '.join(map(str, terms))}, ? Give the next term.", {}

    def step(self, action):
        self.turn += 1
        a = parse(action).replace(",", "").replace(" ", "")
        t = self.turn >= self.max_turns
        if not re.fullmatch(r"-?\d{1,9}", a):
            return "Invalid: answer with an integer.", 0.0, False, t, {}
        if int(a) == self.ans:
            return "Correct!", 1.0, True, False, {"turn": self.turn}
        return f"Wrong: {a} is not the previous term times the ratio.", 0.0, False, t, {}

    def solution(self):
        return [str(self.ans)]
