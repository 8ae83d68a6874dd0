import itertools
import random
import re

def parse(action):
    m = re.findall(r"\\boxed\{([^{}]*)\}", str(action))
    return m[-1].strip() if m else str(action).strip()

WORKERS = ["Ann", "Bob", "Cid", "Dee"]

class AssignmentEnv:
    def __init__(self, max_turns=6, **kwargs):
        self.max_turns = max_turns
        self.reset()

    def reset(self, seed=None):
        self.rng = random.Random(0 if seed is None else seed)
        self.turn = 0
        self.n = self.rng.choice([3, 4, 4])
        self.tasks = "WXYZ"[:self.n]
        self.cost = [[self.rng.randint(1, 9) for _ in range(self.n)] for _ in range(self.n)]
        self.best = min(itertools.permutations(self.tasks), key=self.total)
        rows = "; ".join(f"{w}: " + " ".join(f"{t}={c}" for t, c in zip(self.tasks, row))
                         for w, row in zip(WORKERS, self.cost))
        names = ", ".join(WORKERS[:self.n])
        return (f"Each worker does exactly one task, each task is done once. Costs: {rows}. Minimise the total cost. "
                f"Answer the tasks for {names} in that order, e.g. {self.tasks[::-1]}."), {}

    def total(self, letters):
        return sum(self.cost[i][self.tasks.index(t)] for i, t in enumerate(letters))

    def step(self, action):
        self.turn += 1
        t = self.turn >= self.max_turns
        a = re.sub(r"[^" + self.tasks + "]", "", parse(action).upper())
        if sorted(a) != list(self.tasks):
            return f"Invalid: give each task {', '.join(self.tasks)} once, in worker order.", 0.0, False, t, {}
        if self.total(a) == self.total(self.best):
            return f"Correct! Minimum cost {self.total(a)}.", 1.0, True, False, {"turn": self.turn}
        return f"Total cost {self.total(a)}. A cheaper assignment exists.", 0.0, False, t, {"turn": self.turn}

    def solution(self):
        return ["".join(self.best)]
