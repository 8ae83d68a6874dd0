import random
import re

def parse(action):
    m = re.findall(r"\\boxed\{([^{}]*)\}", str(action))
    return m[-1].strip() if m else str(action).strip()

class FaultEnv:
    def __init__(self, max_turns=8, **kwargs):
        self.max_turns = max_turns
        self.reset()

    def reset(self, seed=None):
        self.rng = random.Random(0 if seed is None else seed)
        self.turn = 0
        self.bad = self.rng.randint(1, 8)
        return ("8 bulbs in series are all dark: one is broken. 'test n' checks if bulbs 1..n conduct. "
                "'broken n' names the broken bulb."), {}

    def step(self, action):
        self.turn += 1
        t = self.turn >= self.max_turns
        m = re.fullmatch(r"(test|broken)\s*([1-8])", parse(action).lower())
        if not m:
            return "Invalid: answer 'test n' or 'broken n' with n from 1 to 8.", 0.0, False, t, {}
        n = int(m.group(2))
        if m.group(1) == "test":
            ok = "conduct" if n < self.bad else "do not conduct"
            return f"Bulbs 1..{n} {ok}.", 0.0, False, t, {"turn": self.turn}
        if n == self.bad:
            return "Correct! You found the broken bulb.", 1.0, True, False, {"turn": self.turn}
        return f"Bulb {n} is fine. You lose.", 0.0, True, False, {"turn": self.turn}

    def solution(self):
        lo, hi, out = 1, 8, []
        while lo < hi:
            mid = (lo + hi) // 2
            out.append(f"test {mid}")
            lo, hi = (lo, mid) if self.bad <= mid else (mid + 1, hi)
        return out + [f"broken {lo}"]
