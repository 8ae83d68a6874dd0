import random
import re

def parse(action):
    m = re.findall(r"\\boxed\{([^{}]*)\}", str(action))
    return m[-1].strip() if m else str(action).strip()

class OrderEnv:
    def __init__(self, max_turns=6, **kwargs):
        self.max_turns = max_turns
        self.reset()

    def reset(self, seed=None):
        self.rng = random.Random(0 if seed is None else seed)
        self.turn = 0
        self.order = self.rng.sample(["Ann", "Bob", "Cid", "Dee", "Eve", "Fay"], 4)
        clues = [f"{x} is older than {y}." for x, y in zip(self.order, self.order[1:])]
        self.rng.shuffle(clues)
        return " ".join(clues) + " List all four from oldest to youngest, e.g. Ann,Bob,Cid,Dee.", {}

    def step(self, action):
        self.turn += 1
        names = [n.strip().title() for n in parse(action).split(",")]
        if names == self.order:
            return "Correct!", 1.0, True, False, {"turn": self.turn}
        return "Wrong. List all four names, oldest first.", 0.0, False, self.turn >= self.max_turns, {"turn": self.turn}

    def solution(self):
        return [",".join(self.order)]
