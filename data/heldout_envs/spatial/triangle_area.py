import random
import re

def parse(action):
    m = re.findall(r"\\boxed\{([^{}]*)\}", str(action))
    return m[-1].strip() if m else str(action).strip()

class TriangleAreaEnv:
    def __init__(self, max_turns=4, **kwargs):
        self.max_turns = max_turns
        self.reset()

    def reset(self, seed=None):
        self.rng = random.Random(0 if seed is None else seed)
        self.turn = 0
        while True:
            self.pts = [(self.rng.randint(0, 9), self.rng.randint(0, 9)) for _ in range(3)]
            (a, b), (c, d), (e, f) = self.pts
            twice = abs((c - a) * (f - b) - (e - a) * (d - b))
            if twice >= 6 and twice % 2 == 0:
                break
        self.ans = twice // 2
        text = ", ".join(f"({x},{y})" for x, y in self.pts)
        return f"A triangle has corners {text}. What is its area? Answer a whole number.", {}

    def step(self, action):
        self.turn += 1
        t = self.turn >= self.max_turns
        a = parse(action)
        if not re.fullmatch(r"\d{1,9}", a):
            return "Invalid: answer a whole number.", 0.0, False, t, {}
        if int(a) == self.ans:
            return "Correct!", 1.0, True, False, {"turn": self.turn}
        return f"Wrong: {a} is {'too big' if int(a) > self.ans else 'too small'}.", 0.0, False, t, {"turn": self.turn}

    def solution(self):
        return [str(self.ans)]
