import itertools
import random
import re

def parse(action):
    m = re.findall(r"\\boxed\{([^{}]*)\}", str(action))
    return m[-1].strip() if m else str(action).strip()

TOWNS = "ABCDE"

class CableNetworkEnv:
    def __init__(self, max_turns=5, **kwargs):
        self.max_turns = max_turns
        self.reset()

    def reset(self, seed=None):
        self.rng = random.Random(0 if seed is None else seed)
        self.turn = 0
        pairs = ["".join(p) for p in itertools.combinations(TOWNS, 2)]
        while True:
            self.cost = {p: self.rng.randint(1, 9) for p in sorted(self.rng.sample(pairs, self.rng.randint(6, 8)))}
            if self.connected(list(self.cost)):
                break
        self.best = self.kruskal()
        text = ", ".join(f"{p}={c}" for p, c in self.cost.items())
        return (f"Possible cables between towns A-E with costs: {text}. Build cables so every town is connected to every "
                f"other (directly or through others) at the lowest total cost. Answer the cables, e.g. AB,BC,CD,DE."), {}

    def connected(self, links):
        seen, todo = {"A"}, ["A"]
        while todo:
            x = todo.pop()
            for p in links:
                if x in p:
                    y = p.replace(x, "")
                    if y not in seen:
                        seen.add(y)
                        todo.append(y)
        return len(seen) == 5

    def kruskal(self):
        group = {x: x for x in TOWNS}
        def root(x):
            while group[x] != x:
                x = group[x]
            return x
        out = []
        for p in sorted(self.cost, key=lambda p: (self.cost[p], p)):
            a, b = root(p[0]), root(p[1])
            if a != b:
                group[a] = b
                out.append(p)
        return out

    def step(self, action):
        self.turn += 1
        t = self.turn >= self.max_turns
        links = ["".join(sorted(x)) for x in re.findall(r"[A-E]{2}", parse(action).upper().replace("-", ""))]
        if not links or any(p not in self.cost for p in links):
            return "Invalid: list cables from the given list, e.g. AB,BC,CD,DE.", 0.0, False, t, {}
        links = sorted(set(links))
        if not self.connected(links):
            return "Not every town is connected.", 0.0, False, t, {"turn": self.turn}
        total, best = sum(self.cost[p] for p in links), sum(self.cost[p] for p in self.best)
        if total == best:
            return f"Correct! Cost {total} is the minimum.", 1.0, True, False, {"turn": self.turn}
        return f"Total cost {total}. A cheaper network exists.", 0.0, False, t, {"turn": self.turn}

    def solution(self):
        return [",".join(self.best)]
