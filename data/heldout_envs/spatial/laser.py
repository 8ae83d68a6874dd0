import random
import re

def parse(action):
    m = re.findall(r"\\boxed\{([^{}]*)\}", str(action))
    return m[-1].strip() if m else str(action).strip()

TURN = {"/": {(0, 1): (-1, 0), (-1, 0): (0, 1), (0, -1): (1, 0), (1, 0): (0, -1)},
        "\\": {(0, 1): (1, 0), (1, 0): (0, 1), (0, -1): (-1, 0), (-1, 0): (0, -1)}}

class LaserEnv:
    def __init__(self, max_turns=3, **kwargs):
        self.max_turns = max_turns
        self.reset()

    def reset(self, seed=None):
        self.rng = random.Random(0 if seed is None else seed)
        self.turn = 0
        while True:
            self.grid = [["."] * 4 for _ in range(4)]
            for k in self.rng.sample(range(16), self.rng.randint(3, 5)):
                self.grid[k // 4][k % 4] = self.rng.choice("/\\")
            self.row = self.rng.randrange(4)
            self.ans, hits = self.trace()
            if hits >= 2:
                break
        rows = "\n".join("".join(r) for r in self.grid)
        return (f"Grid (rows 1-4 top to bottom, columns 1-4 left to right; / and \\ are two-sided mirrors):\n{rows}\n"
                f"A laser enters row {self.row + 1} from the left edge, heading right. Where does it leave the grid? "
                f"Answer the edge and number: top c, bottom c, left r or right r (e.g. top 3)."), {}

    def trace(self):
        r, c, d, hits = self.row, 0, (0, 1), 0
        while 0 <= r < 4 and 0 <= c < 4:
            cell = self.grid[r][c]
            if cell != ".":
                d, hits = TURN[cell][d], hits + 1
            r, c = r + d[0], c + d[1]
        if r < 0:
            return f"top {c + 1}", hits
        if r > 3:
            return f"bottom {c + 1}", hits
        return (f"left {r + 1}" if c < 0 else f"right {r + 1}"), hits

    def step(self, action):
        self.turn += 1
        t = self.turn >= self.max_turns
        m = re.fullmatch(r"(top|bottom|left|right)\s*(?:row|column|col)?\s*([1-4])", parse(action).lower().strip())
        if not m:
            return "Invalid: answer like top 3, bottom 1, left 2 or right 4.", 0.0, False, t, {}
        if f"{m.group(1)} {m.group(2)}" == self.ans:
            return "Correct!", 1.0, True, False, {"turn": self.turn}
        return "Wrong exit.", 0.0, False, t, {"turn": self.turn}

    def solution(self):
        return [self.ans]
