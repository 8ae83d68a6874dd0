import random
import re

def parse(action):
    m = re.findall(r"\\boxed\{([^{}]*)\}", str(action))
    return m[-1].strip() if m else str(action).strip()

class RectOverlapEnv:
    def __init__(self, max_turns=5, **kwargs):
        self.max_turns = max_turns
        self.reset()

    def reset(self, seed=None):
        self.rng = random.Random(0 if seed is None else seed)
        self.turn = 0
        rects = []
        for _ in range(2):
            x, y = self.rng.randint(0, 6), self.rng.randint(0, 6)
            rects.append((x, y, x + self.rng.randint(2, 5), y + self.rng.randint(2, 5)))
        (a, b, c, d), (e, f, g, h) = rects
        self.ans = max(0, min(c, g) - max(a, e)) * max(0, min(d, h) - max(b, f))
        text = " and ".join(f"from ({r[0]},{r[1]}) to ({r[2]},{r[3]})" for r in rects)
        return f"Two rectangles with sides parallel to the axes: {text}. What is the area of their overlap?", {}

    def step(self, action):
        self.turn += 1
        a = parse(action)
        if not re.fullmatch(r"\d{1,9}", a):
            return "Invalid: answer a whole number.", 0.0, False, self.turn >= self.max_turns, {}
        if int(a) == self.ans:
            return "Correct!", 1.0, True, False, {"turn": self.turn}
        return "Wrong area.", 0.0, False, self.turn >= self.max_turns, {"turn": self.turn}

    def solution(self):
        return [str(self.ans)]
