import random
import re

def parse(action):
    m = re.findall(r"\\boxed\{([^{}]*)\}", str(action))
    return m[-1].strip() if m else str(action).strip()

def name(p):
    return "abcde"[p[0]] + str(p[1] + 1)

def jumps(p):
    d = [(1, 2), (2, 1), (-1, 2), (-2, 1), (1, -2), (2, -1), (-1, -2), (-2, -1)]
    cells = [(p[0] + dx, p[1] + dy) for dx, dy in d]
    return {name(n): n for n in cells if min(n) >= 0 and max(n) < 5}

class KnightEnv:
    def __init__(self, max_turns=8, **kwargs):
        self.max_turns = max_turns
        self.reset()

    def reset(self, seed=None):
        self.rng = random.Random(0 if seed is None else seed)
        self.turn = 0
        self.pos = (self.rng.randrange(5), self.rng.randrange(5))
        self.paths, todo = {self.pos: []}, [self.pos]
        for p in todo:
            for k, n in jumps(p).items():
                if n not in self.paths:
                    self.paths[n] = self.paths[p] + [k]
                    todo.append(n)
        self.goal = self.rng.choice([p for p in self.paths if len(self.paths[p]) in (2, 3)])
        return f"5x5 board, files a-e, ranks 1-5. Move your knight from {name(self.pos)} to {name(self.goal)}, one square per turn.", {}

    def step(self, action):
        self.turn += 1
        a = parse(action).lower()
        t = self.turn >= self.max_turns
        if a not in jumps(self.pos):
            return f"Illegal. Knight on {name(self.pos)} can go to {','.join(sorted(jumps(self.pos)))}.", 0.0, False, t, {}
        self.pos = jumps(self.pos)[a]
        if self.pos == self.goal:
            return "You reached the target!", 1.0, True, False, {"turn": self.turn}
        return f"Knight on {a}. Target {name(self.goal)}.", 0.0, False, t, {}

    def solution(self):
        return self.paths[self.goal]
