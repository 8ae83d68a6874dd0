import random
import re

def parse(action):
    m = re.findall(r"\\boxed\{([^{}]*)\}", str(action))
    return m[-1].strip() if m else str(action).strip()

class PeakSearchEnv:
    def __init__(self, max_turns=10, **kwargs):
        self.max_turns = max_turns
        self.reset()

    def reset(self, seed=None):
        self.rng = random.Random(0 if seed is None else seed)
        self.turn = 0
        self.top = self.rng.randint(10, 16)
        self.peak = self.rng.randint(1, self.top)
        self.profit = {self.peak: self.rng.randint(60, 90)}
        for x in range(self.peak - 1, 0, -1):
            self.profit[x] = self.profit[x + 1] - self.rng.randint(1, 6)
        for x in range(self.peak + 1, self.top + 1):
            self.profit[x] = self.profit[x - 1] - self.rng.randint(1, 6)
        return (f"A shop may set its price to a whole number from 1 to {self.top}. Profit strictly rises with the price "
                f"up to a single best price, then strictly falls. Send a price to learn its profit, or answer 'best p' "
                f"(one chance only)."), {}

    def step(self, action):
        self.turn += 1
        t = self.turn >= self.max_turns
        a = parse(action).lower().strip()
        m = re.fullmatch(r"(best\s*)?(\d{1,9})", a)
        if not m or not 1 <= int(m.group(2)) <= self.top:
            return f"Invalid: send a price 1-{self.top}, or answer 'best p'.", 0.0, False, t, {}
        x = int(m.group(2))
        if not m.group(1):
            return f"Price {x} gives profit {self.profit[x]}.", 0.0, False, t, {"turn": self.turn}
        if x == self.peak:
            return f"Correct! Price {x} is best.", 1.0, True, False, {"turn": self.turn}
        return f"Wrong: price {x} is not the best. You lose.", 0.0, True, False, {"turn": self.turn}

    def solution(self):
        lo, hi, out = 1, self.top, []
        while lo < hi:
            mid = (lo + hi) // 2
            out += [str(mid), str(mid + 1)]
            lo, hi = (mid + 1, hi) if self.profit[mid] < self.profit[mid + 1] else (lo, mid)
        return out + [f"best {lo}"]
