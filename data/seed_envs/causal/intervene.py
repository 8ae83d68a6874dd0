import random
import re

def parse(action):
    m = re.findall(r"\\boxed\{([^{}]*)\}", str(action))
    return m[-1].strip() if m else str(action).strip()

class InterveneEnv:
    def __init__(self, max_turns=5, **kwargs):
        self.max_turns = max_turns
        self.reset()

    def reset(self, seed=None):
        self.rng = random.Random(0 if seed is None else seed)
        self.turn = 0
        while True:
            order = self.rng.sample("ABCDEF", 6)
            edges = [(x, y) for i, x in enumerate(order) for y in order[i + 1:] if self.rng.random() < 0.3]
            x = self.rng.choice(order[:4])
            hit = {x}
            for p, q in edges:
                if p in hit:
                    hit.add(q)
            if 2 <= len(hit) <= 4:
                break
        self.ans = "".join(sorted(hit - {x}))
        links = ", ".join(f"{p}->{q}" for p, q in sorted(edges))
        return f"Causal links: {links}. We force {x} to a new value. Which other variables can change? Answer letters, e.g. BD.", {}

    def step(self, action):
        self.turn += 1
        a = re.sub(r"[^A-F]", "", parse(action).upper())
        if not a:
            return "Invalid: answer letters A-F, e.g. BD.", 0.0, False, self.turn >= self.max_turns, {}
        if sorted(set(a)) == list(self.ans):
            return "Correct!", 1.0, True, False, {"turn": self.turn}
        return "Wrong set. Follow the arrows from the forced variable.", 0.0, False, self.turn >= self.max_turns, {}

    def solution(self):
        return [self.ans]
