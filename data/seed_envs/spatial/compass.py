import random
import re

def parse(action):
    m = re.findall(r"\\boxed\{([^{}]*)\}", str(action))
    return m[-1].strip() if m else str(action).strip()

DIRS, TURNS = ["north", "east", "south", "west"], {"left": 3, "right": 1, "around": 2}

class CompassEnv:
    def __init__(self, max_turns=4, **kwargs):
        self.max_turns = max_turns
        self.reset()

    def reset(self, seed=None):
        self.rng = random.Random(0 if seed is None else seed)
        self.turn = 0
        d = self.rng.randrange(4)
        moves = [self.rng.choice(list(TURNS)) for _ in range(3)]
        self.ans = DIRS[(d + sum(TURNS[m] for m in moves)) % 4]
        return f"You face {DIRS[d]}. You turn {', then '.join(moves)}. Which way do you face now?", {}

    def step(self, action):
        self.turn += 1
        a = parse(action).lower()
        if a == self.ans:
            return "Correct!", 1.0, True, False, {"turn": self.turn}
        if a in DIRS:
            return "Wrong.", 0.0, True, False, {"turn": self.turn}
        return "Invalid: answer north, east, south or west.", 0.0, False, self.turn >= self.max_turns, {}

    def solution(self):
        return [self.ans]
