import random
import re

def parse(action):
    m = re.findall(r"\\boxed\{([^{}]*)\}", str(action))
    return m[-1].strip() if m else str(action).strip()

OPS = {"rotate 90 degrees counterclockwise about the origin": lambda x, y: (-y, x),
       "reflect across the x-axis": lambda x, y: (x, -y),
       "reflect across the y-axis": lambda x, y: (-x, y),
       "shift right by 2": lambda x, y: (x + 2, y)}

class TransformEnv:
    def __init__(self, max_turns=5, **kwargs):
        self.max_turns = max_turns
        self.reset()

    def reset(self, seed=None):
        self.rng = random.Random(0 if seed is None else seed)
        self.turn = 0
        x, y = self.rng.randint(-6, 6), self.rng.randint(-6, 6)
        ops = self.rng.sample(list(OPS), 2)
        self.ans = OPS[ops[1]](*OPS[ops[0]](x, y))
        return f"Start at point ({x},{y}). First {ops[0]}, then {ops[1]}. Answer the new point as x,y.", {}

    def step(self, action):
        self.turn += 1
        a = parse(action).replace(" ", "").strip("()")
        t = self.turn >= self.max_turns
        if not re.fullmatch(r"-?\d{1,9},-?\d{1,9}", a):
            return "Invalid: answer two integers as x,y.", 0.0, False, t, {}
        if tuple(int(v) for v in a.split(",")) == self.ans:
            return "Correct!", 1.0, True, False, {"turn": self.turn}
        return "Wrong point. Try again.", 0.0, False, t, {"turn": self.turn}

    def solution(self):
        return [f"{self.ans[0]},{self.ans[1]}"]
