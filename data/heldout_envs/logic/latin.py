import random
import re

def parse(action):
    m = re.findall(r"\\boxed\{([^{}]*)\}", str(action))
    return m[-1].strip() if m else str(action).strip()

class LatinSquareEnv:
    def __init__(self, max_turns=4, **kwargs):
        self.max_turns = max_turns
        self.reset()

    def reset(self, seed=None):
        self.rng = random.Random(0 if seed is None else seed)
        self.turn = 0
        rows, cols, syms = self.rng.sample(range(4), 4), self.rng.sample(range(4), 4), self.rng.sample("1234", 4)
        self.full = [[syms[(rows[r] + cols[c]) % 4] for c in range(4)] for r in range(4)]
        while True:
            self.blanks = sorted(self.rng.sample(range(16), self.rng.randint(5, 7)))
            if self.count_fills() == 1:
                break
        self.ans = "".join(self.full[k // 4][k % 4] for k in self.blanks)
        grid = " / ".join(" ".join("?" if r * 4 + c in self.blanks else self.full[r][c] for c in range(4)) for r in range(4))
        return (f"4x4 grid, rows top to bottom: {grid}. Fill each ? so every row and every column holds 1, 2, 3, 4 once. "
                f"Answer the {len(self.blanks)} missing digits in reading order (row by row, left to right) as one string."), {}

    def count_fills(self):
        g = [list(row) for row in self.full]
        for k in self.blanks:
            g[k // 4][k % 4] = "."
        def go(i):
            if i == len(self.blanks):
                return 1
            r, c = divmod(self.blanks[i], 4)
            n = 0
            for d in "1234":
                if d not in g[r] and all(g[x][c] != d for x in range(4)):
                    g[r][c] = d
                    n += go(i + 1)
                    g[r][c] = "."
            return n
        return go(0)

    def step(self, action):
        self.turn += 1
        t = self.turn >= self.max_turns
        a = re.sub(r"[\s,]", "", parse(action))
        if not re.fullmatch(r"[1-4]+", a) or len(a) != len(self.ans):
            return f"Invalid: answer {len(self.ans)} digits 1-4, the ? cells in reading order.", 0.0, False, t, {}
        if a == self.ans:
            return "Correct!", 1.0, True, False, {"turn": self.turn}
        right = sum(x == y for x, y in zip(a, self.ans))
        return f"{right} of {len(self.ans)} cells right.", 0.0, False, t, {"turn": self.turn}

    def solution(self):
        return [self.ans]
