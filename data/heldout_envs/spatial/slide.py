import random
import re

def parse(action):
    m = re.findall(r"\\boxed\{([^{}]*)\}", str(action))
    return m[-1].strip() if m else str(action).strip()

MOVES = {"U": -3, "D": 3, "L": -1, "R": 1}
BACK = {"U": "D", "D": "U", "L": "R", "R": "L"}
GOAL = "12345678_"

class SlidePuzzleEnv:
    def __init__(self, max_turns=8, **kwargs):
        self.max_turns = max_turns
        self.reset()

    def reset(self, seed=None):
        self.rng = random.Random(0 if seed is None else seed)
        self.turn = 0
        while True:
            self.board, path = GOAL, []
            for _ in range(self.rng.randint(4, 7)):
                ok = [k for k in "UDLR" if self.legal(self.board, k) and not (path and BACK[path[-1]] == k)]
                k = self.rng.choice(ok)
                self.board, path = self.move(self.board, k), path + [k]
            if self.board != GOAL:
                break
        self.plan = "".join(BACK[k] for k in reversed(path))
        return (f"3x3 sliding puzzle, rows top to bottom, _ is the gap: {self.show()}. Goal: 1 2 3 / 4 5 6 / 7 8 _. "
                f"Move the gap U, D, L or R (it swaps with that neighbour); send one or more moves per turn, e.g. LU."), {}

    def legal(self, board, k):
        g = board.index("_")
        return not (k == "U" and g < 3 or k == "D" and g > 5 or k == "L" and g % 3 == 0 or k == "R" and g % 3 == 2)

    def move(self, board, k):
        g, b = board.index("_"), list(board)
        n = g + MOVES[k]
        b[g], b[n] = b[n], b[g]
        return "".join(b)

    def show(self):
        return " / ".join(" ".join(self.board[r * 3:r * 3 + 3]) for r in range(3))

    def step(self, action):
        self.turn += 1
        t = self.turn >= self.max_turns
        a = re.sub(r"[\s,]", "", parse(action).upper())
        if not re.fullmatch(r"[UDLR]{1,20}", a):
            return "Invalid: answer moves U, D, L, R, e.g. LU.", 0.0, False, t, {}
        for k in a:
            if not self.legal(self.board, k):
                return f"Move {k} hits the edge; stopped. Board: {self.show()}.", 0.0, False, t, {"turn": self.turn}
            self.board = self.move(self.board, k)
        if self.board == GOAL:
            return "Solved!", 1.0, True, False, {"turn": self.turn}
        return f"Board: {self.show()}.", 0.0, False, t, {"turn": self.turn}

    def solution(self):
        return [self.plan]
