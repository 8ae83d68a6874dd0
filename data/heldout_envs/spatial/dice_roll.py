import random
import re

def parse(action):
    m = re.findall(r"\\boxed\{([^{}]*)\}", str(action))
    return m[-1].strip() if m else str(action).strip()

def roll(d, way):
    top, north, east = d
    if way == "north":
        return 7 - north, top, east
    if way == "south":
        return north, 7 - top, east
    if way == "east":
        return 7 - east, north, top
    return east, north, 7 - top

class DiceRollEnv:
    def __init__(self, max_turns=2, **kwargs):
        self.max_turns = max_turns
        self.reset()

    def reset(self, seed=None):
        self.rng = random.Random(0 if seed is None else seed)
        self.turn = 0
        d = (1, 2, 3)
        for _ in range(8):
            d = roll(d, self.rng.choice(["north", "south", "east", "west"]))
            if self.rng.random() < 0.5:
                d = (d[0], 7 - d[2], d[1])  # spin a quarter turn about the vertical axis
        self.start = d
        self.moves = [self.rng.choice(["north", "south", "east", "west"]) for _ in range(self.rng.randint(2, 4))]
        for way in self.moves:
            d = roll(d, way)
        self.ans = str(d[0])
        return (f"A die (opposite faces add up to 7) shows {self.start[0]} on top, {self.start[1]} facing north and "
                f"{self.start[2]} facing east. It tips over one edge at a time: {', then '.join(self.moves)}. "
                f"Which number is on top now? Answer 1-6."), {}

    def step(self, action):
        self.turn += 1
        t = self.turn >= self.max_turns
        a = parse(action)
        if a not in ("1", "2", "3", "4", "5", "6"):
            return "Invalid: answer a number 1-6.", 0.0, False, t, {}
        if a == self.ans:
            return "Correct!", 1.0, True, False, {"turn": self.turn}
        return "Wrong.", 0.0, True, False, {"turn": self.turn}

    def solution(self):
        return [self.ans]
