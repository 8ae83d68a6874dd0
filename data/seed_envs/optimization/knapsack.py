import itertools
import random
import re

def parse(action):
    m = re.findall(r"\\boxed\{([^{}]*)\}", str(action))
    return m[-1].strip() if m else str(action).strip()

class KnapsackEnv:
    def __init__(self, max_turns=6, **kwargs):
        self.max_turns = max_turns
        self.reset()

    def reset(self, seed=None):
        self.rng = random.Random(0 if seed is None else seed)
        self.turn = 0
        self.items = [(self.rng.randint(1, 6), self.rng.randint(1, 9)) for _ in range(4)]
        self.cap = self.rng.randint(6, 10)
        subsets = [s for k in range(1, 5) for s in itertools.combinations(range(4), k)]
        fits = [s for s in subsets if sum(self.items[i][0] for i in s) <= self.cap]
        self.best = max(fits, key=lambda s: sum(self.items[i][1] for i in s))
        text = " ".join(f"{i + 1}:({w},{v})" for i, (w, v) in enumerate(self.items))
        return f"Items (weight,value): {text}. Capacity {self.cap}. Pick items with the largest total value, e.g. 1,3.", {}

    def step(self, action):
        self.turn += 1
        t = self.turn >= self.max_turns
        picks = set(re.findall(r"[1-4]", parse(action)))
        if not picks:
            return "Invalid: list item numbers 1-4, e.g. 1,3.", 0.0, False, t, {}
        w = sum(self.items[int(i) - 1][0] for i in picks)
        v = sum(self.items[int(i) - 1][1] for i in picks)
        if w > self.cap:
            return f"Too heavy: weight {w} > {self.cap}.", 0.0, False, t, {}
        if v == sum(self.items[i][1] for i in self.best):
            return "Correct! Best value.", 1.0, True, False, {"turn": self.turn}
        return f"Value {v}. A better choice exists.", 0.0, False, t, {}

    def solution(self):
        return [",".join(str(i + 1) for i in self.best)]
