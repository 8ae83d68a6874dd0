import random
import re

def parse(action):
    m = re.findall(r"\\boxed\{([^{}]*)\}", str(action))
    return m[-1].strip() if m else str(action).strip()

class MaxPathEnv:
    def __init__(self, max_turns=8, **kwargs):
        self.max_turns = max_turns
        self.reset()

    def reset(self, seed=None):
        self.rng = random.Random(0 if seed is None else seed)
        self.turn = 0
        self.g = [[self.rng.randint(1, 9) for _ in range(3)] for _ in range(3)]
        self.r, self.c, self.total = 0, 0, self.g[0][0]
        self.best = max(["RRDD", "RDRD", "RDDR", "DRRD", "DRDR", "DDRR"], key=self.score)
        rows = " / ".join(" ".join(map(str, row)) for row in self.g)
        return f"Grid rows: {rows}. Walk from top-left to bottom-right, one move R or D per turn, for the largest sum.", {}

    def score(self, path):
        r, c, s = 0, 0, self.g[0][0]
        for k in path:
            r, c = (r + 1, c) if k == "D" else (r, c + 1)
            s += self.g[r][c]
        return s

    def step(self, action):
        self.turn += 1
        t = self.turn >= self.max_turns
        a = parse(action).upper()
        r, c = (self.r + 1, self.c) if a == "D" else (self.r, self.c + 1)
        if a not in ("R", "D") or r > 2 or c > 2:
            return "Invalid: move R or D inside the grid.", 0.0, False, t, {}
        self.r, self.c, self.total = r, c, self.total + self.g[r][c]
        if (r, c) != (2, 2):
            return f"At row {r + 1}, column {c + 1}. Sum {self.total}.", 0.0, False, t, {}
        if self.total == self.score(self.best):
            return f"Best sum {self.total}!", 1.0, True, False, {"turn": self.turn}
        return f"Sum {self.total}, but {self.score(self.best)} was possible.", 0.0, True, False, {}

    def solution(self):
        return list(self.best)
