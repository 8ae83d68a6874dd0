import random
import re

def parse(action):
    m = re.findall(r"\\boxed\{([^{}]*)\}", str(action))
    return m[-1].strip() if m else str(action).strip()

class LinearEqEnv:
    def __init__(self, max_turns=6, **kwargs):
        self.max_turns = max_turns
        self.reset()

    def reset(self, seed=None):
        self.rng = random.Random(0 if seed is None else seed)
        self.turn = 0
        self.a, self.x = self.rng.randint(2, 9), self.rng.randint(-9, 9)
        self.b = self.rng.randint(-20, 20)
        self.c = self.a * self.x + self.b
        sign = "+" if self.b >= 0 else "-"
        return f"Solve for x: {self.a}x {sign} {abs(self.b)} = {self.c}. Answer with x.", {}

    def step(self, action):
        self.turn += 1
        a = parse(action).replace(" ", "").replace("x=", "")
        t = self.turn >= self.max_turns
        if not re.fullmatch(r"-?\d{1,9}", a):
            return "Invalid: answer with an integer.", 0.0, False, t, {}
        v = int(a)
        if v == self.x:
            return "Correct!", 1.0, True, False, {"turn": self.turn}
        left = self.a * v + self.b
        return f"Wrong: with x={v} the left side is {left}, not {self.c}.", 0.0, False, t, {}

    def solution(self):
        return [str(self.x)]
