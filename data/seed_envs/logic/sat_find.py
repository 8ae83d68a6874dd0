import random
import re

def parse(action):
    m = re.findall(r"\\boxed\{([^{}]*)\}", str(action))
    return m[-1].strip() if m else str(action).strip()

class SatFindEnv:
    def __init__(self, max_turns=6, **kwargs):
        self.max_turns = max_turns
        self.reset()

    def reset(self, seed=None):
        self.rng = random.Random(0 if seed is None else seed)
        self.turn = 0
        hidden = [self.rng.randint(0, 1) for _ in range(3)]
        self.clauses = []
        for i, j in self.rng.sample([(0, 1), (1, 2), (0, 2)], 3):
            si, sj = self.rng.randint(0, 1), self.rng.randint(0, 1)
            if hidden[i] != si and hidden[j] != sj:
                si = hidden[i]
            self.clauses.append(((i, si), (j, sj)))
        lit = lambda k, s: ("" if s else "not ") + "ABC"[k]
        text = " and ".join(f"({lit(*c[0])} or {lit(*c[1])})" for c in self.clauses)
        return f"Make true: {text}. Answer bits for A,B,C, e.g. 101.", {}

    def false_clauses(self, bits):
        return [n + 1 for n, c in enumerate(self.clauses) if not any(bits[k] == s for k, s in c)]

    def step(self, action):
        self.turn += 1
        a = parse(action).replace(",", "").replace(" ", "")
        t = self.turn >= self.max_turns
        if not re.fullmatch(r"[01]{3}", a):
            return "Invalid: answer three bits like 101.", 0.0, False, t, {}
        bad = self.false_clauses([int(ch) for ch in a])
        if not bad:
            return "Correct!", 1.0, True, False, {"turn": self.turn}
        return f"Clause {bad[0]} is false.", 0.0, False, t, {}

    def solution(self):
        for n in range(8):
            bits = [n >> 2 & 1, n >> 1 & 1, n & 1]
            if not self.false_clauses(bits):
                return ["".join(map(str, bits))]
