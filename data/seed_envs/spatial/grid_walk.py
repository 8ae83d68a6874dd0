import random
import re

def parse(action):
    m = re.findall(r"\\boxed\{([^{}]*)\}", str(action))
    return m[-1].strip() if m else str(action).strip()

MOVES = {"north": (0, 1), "south": (0, -1), "east": (1, 0), "west": (-1, 0)}

class GridWalkEnv:
    def __init__(self, max_turns=10, **kwargs):
        self.max_turns = max_turns
        self.reset()

    def reset(self, seed=None):
        self.rng = random.Random(0 if seed is None else seed)
        self.turn = 0
        while True:
            self.pos = [self.rng.randrange(5), self.rng.randrange(5)]
            self.goal = [self.rng.randrange(5), self.rng.randrange(5)]
            if 2 <= abs(self.pos[0] - self.goal[0]) + abs(self.pos[1] - self.goal[1]) <= 4:
                break
        self.start = list(self.pos)
        return f"5x5 grid, x,y in 0-4, east is +x, north is +y. You are at {tuple(self.pos)}, goal {tuple(self.goal)}. Move north, south, east or west.", {}

    def step(self, action):
        self.turn += 1
        a = parse(action).lower()
        t = self.turn >= self.max_turns
        if a not in MOVES:
            return "Invalid: move north, south, east or west.", 0.0, False, t, {}
        x, y = self.pos[0] + MOVES[a][0], self.pos[1] + MOVES[a][1]
        if not (0 <= x < 5 and 0 <= y < 5):
            return f"Wall. You stay at {tuple(self.pos)}.", 0.0, False, t, {}
        self.pos = [x, y]
        if self.pos == self.goal:
            return "You reached the goal!", 1.0, True, False, {"turn": self.turn}
        return f"You are at {tuple(self.pos)}, goal {tuple(self.goal)}.", 0.0, False, t, {}

    def solution(self):
        dx, dy = self.goal[0] - self.start[0], self.goal[1] - self.start[1]
        return ["east" if dx > 0 else "west"] * abs(dx) + ["north" if dy > 0 else "south"] * abs(dy)
