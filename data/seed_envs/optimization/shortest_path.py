import itertools
import random
import re

def parse(action):
    m = re.findall(r"\\boxed\{([^{}]*)\}", str(action))
    return m[-1].strip() if m else str(action).strip()

class ShortestPathEnv:
    def __init__(self, max_turns=6, **kwargs):
        self.max_turns = max_turns
        self.reset()

    def reset(self, seed=None):
        self.rng = random.Random(0 if seed is None else seed)
        self.turn = 0
        paths = ["A" + "".join(p) + "E" for k in range(1, 4) for p in itertools.permutations("BCD", k)]
        ok = []
        while not ok:
            self.w = {a + b: self.rng.randint(1, 9) for a, b in itertools.combinations("ABCDE", 2)
                      if a + b != "AE" and self.rng.random() < 0.6}
            ok = [p for p in paths if self.cost(p) is not None]
        self.best = min(ok, key=self.cost)
        roads = ", ".join(f"{k}={v}" for k, v in self.w.items())
        return f"Roads with lengths: {roads}. Give the shortest route from A to E as letters, e.g. ACE.", {}

    def cost(self, path):
        legs = [self.w.get("".join(sorted(p))) for p in zip(path, path[1:])]
        return None if None in legs else sum(legs)

    def step(self, action):
        self.turn += 1
        t = self.turn >= self.max_turns
        a = re.sub(r"[^A-E]", "", parse(action).upper())
        if len(a) < 2 or a[0] != "A" or a[-1] != "E":
            return "Invalid: give a route like ACE from A to E.", 0.0, False, t, {}
        c = self.cost(a)
        if c is None:
            return "That route uses a missing road.", 0.0, False, t, {}
        if c == self.cost(self.best):
            return "Correct! Shortest route.", 1.0, True, False, {"turn": self.turn}
        return f"Length {c}. A shorter route exists.", 0.0, False, t, {}

    def solution(self):
        return [self.best]
