import random
import re

def parse(action):
    m = re.findall(r"\\boxed\{([^{}]*)\}", str(action))
    return m[-1].strip() if m else str(action).strip()

PRIMES = [2, 3, 5, 7, 11, 13]

class FactorizeEnv:
    def __init__(self, max_turns=4, **kwargs):
        self.max_turns = max_turns
        self.reset()

    def reset(self, seed=None):
        self.rng = random.Random(0 if seed is None else seed)
        self.turn = 0
        while True:
            self.factors = sorted(self.rng.choice(PRIMES) for _ in range(self.rng.randint(3, 5)))
            self.n = 1
            for p in self.factors:
                self.n *= p
            if self.n <= 2000:
                break
        return f"Write {self.n} as a product of primes, e.g. 2^2*3*7 or 2*2*3*7.", {}

    def read(self, a):
        out = []
        for term in a.replace("x", "*").replace("·", "*").split("*"):
            m = re.fullmatch(r"(\d{1,6})(?:\^(\d{1,2}))?", term.strip())
            if not m:
                return None
            out += [int(m.group(1))] * int(m.group(2) or 1)
        return sorted(out)

    def step(self, action):
        self.turn += 1
        t = self.turn >= self.max_turns
        got = self.read(parse(action).replace(" ", ""))
        if not got:
            return "Invalid: answer a product like 2^2*3*7.", 0.0, False, t, {}
        if got == self.factors:
            return "Correct!", 1.0, True, False, {"turn": self.turn}
        prod = 1
        for p in got:
            prod *= p
        composite = [p for p in got if p < 2 or any(p % d == 0 for d in range(2, p))]
        if prod != self.n:
            return f"Wrong: that product is {prod}, not {self.n}.", 0.0, False, t, {"turn": self.turn}
        return f"The product is right but {composite[0]} is not prime.", 0.0, False, t, {"turn": self.turn}

    def solution(self):
        return ["*".join(map(str, self.factors))]
