import random
import re

def parse(action):
    m = re.findall(r"\\boxed\{([^{}]*)\}", str(action))
    return m[-1].strip() if m else str(action).strip()

MOVES = {"U": (-1, 0), "D": (1, 0), "L": (0, -1), "R": (0, 1)}

class MazeEnv:
    def __init__(self, max_turns=5, **kwargs):
        self.max_turns = max_turns
        self.reset()

    def reset(self, seed=None):
        self.rng = random.Random(0 if seed is None else seed)
        self.turn = 0
        self.grid = {(r, c): self.rng.choice("..#") for r in range(5) for c in range(5)}
        r, c = self.start = (self.rng.randrange(5), self.rng.randrange(5))
        self.grid[r, c], self.path = "S", ""
        for k in self.rng.choices(("D" if r < 2 else "U") + ("R" if c < 2 else "L"), k=40):
            n = (r + MOVES[k][0], c + MOVES[k][1])
            if len(self.path) < 4 and n in self.grid:
                (r, c), self.path = n, self.path + k
                self.grid[n] = "."
        self.grid[r, c] = "G"
        rows = "\n".join("".join(self.grid[r, c] for c in range(5)) for r in range(5))
        return f"Maze (S start, G goal, # wall):\n{rows}\nAnswer moves U D L R, e.g. RRD.", {}

    def step(self, action):
        self.turn += 1
        a, t = parse(action).upper(), self.turn >= self.max_turns
        if not re.fullmatch(r"[UDLR]+", a):
            return "Invalid: use letters U D L R.", 0.0, False, t, {}
        r, c = self.start
        for k in a:
            r, c = r + MOVES[k][0], c + MOVES[k][1]
            if self.grid.get((r, c), "#") == "#":
                return "You hit a wall.", 0.0, False, t, {}
        if self.grid[r, c] == "G":
            return "You reached G!", 1.0, True, False, {"turn": self.turn}
        return "You did not reach G.", 0.0, False, t, {}

    def solution(self):
        return [self.path]
