import random
import re

def parse(action):
    m = re.findall(r"\\boxed\{([^{}]*)\}", str(action))
    return m[-1].strip() if m else str(action).strip()

CIRCUITS = {"(S1 series S2) parallel S3": lambda a, b, c: (a and b) or c,
            "S1 series (S2 parallel S3)": lambda a, b, c: a and (b or c),
            "(S1 parallel S2) series S3": lambda a, b, c: (a or b) and c}

class SwitchEnv:
    def __init__(self, max_turns=6, **kwargs):
        self.max_turns = max_turns
        self.reset()

    def reset(self, seed=None):
        self.rng = random.Random(0 if seed is None else seed)
        self.turn = 0
        self.name = self.rng.choice(list(CIRCUITS))
        self.s = self.start = self.rng.choice([m for m in range(8) if not self.lit(m)])
        return f"Lamp circuit: {self.name}. {self.state()} Toggle one switch per turn to light it.", {}

    def lit(self, m):
        return bool(CIRCUITS[self.name](m & 1, m & 2, m & 4))

    def state(self):
        sw = " ".join(f"S{i + 1}={'on' if self.s >> i & 1 else 'off'}" for i in range(3))
        return f"{sw}, lamp {'ON' if self.lit(self.s) else 'off'}."

    def step(self, action):
        self.turn += 1
        a, t = parse(action).upper(), self.turn >= self.max_turns
        if a not in ("S1", "S2", "S3"):
            return "Invalid: answer S1, S2 or S3.", 0.0, False, t, {}
        self.s ^= 1 << int(a[1]) - 1
        if self.lit(self.s):
            return self.state() + " You win!", 1.0, True, False, {"turn": self.turn}
        return self.state(), 0.0, False, t, {"turn": self.turn}

    def solution(self):
        ok = [x for x in range(8) if not x & self.start and self.lit(x | self.start)]
        x = min(ok, key=lambda x: bin(x).count("1"))
        return [f"S{i + 1}" for i in range(3) if x >> i & 1]
