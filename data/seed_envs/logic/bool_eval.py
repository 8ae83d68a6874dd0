import random
import re

def parse(action):
    m = re.findall(r"\\boxed\{([^{}]*)\}", str(action))
    return m[-1].strip() if m else str(action).strip()

OPS = {"and": lambda x, y: x & y, "or": lambda x, y: x | y, "xor": lambda x, y: x ^ y}

class BoolEvalEnv:
    def __init__(self, max_turns=4, **kwargs):
        self.max_turns = max_turns
        self.reset()

    def reset(self, seed=None):
        self.rng = random.Random(0 if seed is None else seed)
        self.turn = 0
        v = {n: self.rng.randint(0, 1) for n in "ABC"}
        x, y, z = self.rng.sample("ABC", 3)
        o1, o2 = self.rng.choice(list(OPS)), self.rng.choice(list(OPS))
        neg = self.rng.randint(0, 1)
        self.ans = str(OPS[o2](OPS[o1](v[x], v[y]), v[z] ^ neg))
        expr = f"({x} {o1} {y}) {o2} {'not ' * neg}{z}"
        vals = ", ".join(f"{n}={v[n]}" for n in "ABC")
        return f"{vals}. Evaluate {expr}. Answer 1 (true) or 0 (false).", {}

    def step(self, action):
        self.turn += 1
        a = parse(action).lower().replace("true", "1").replace("false", "0")
        if a not in ("0", "1"):
            return "Invalid: answer 1 or 0.", 0.0, False, self.turn >= self.max_turns, {}
        if a == self.ans:
            return "Correct!", 1.0, True, False, {"turn": self.turn}
        return "Wrong.", 0.0, True, False, {"turn": self.turn}

    def solution(self):
        return [self.ans]
