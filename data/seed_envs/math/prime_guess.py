import random
import re

def parse(action):
    m = re.findall(r"\\boxed\{([^{}]*)\}", str(action))
    return m[-1].strip() if m else str(action).strip()

class PrimeGuessEnv:
    def __init__(self, max_turns=8, **kwargs):
        self.max_turns = max_turns
        self.primes = [p for p in range(2, 60) if all(p % d for d in range(2, p))]
        self.reset()

    def reset(self, seed=None):
        self.rng = random.Random(0 if seed is None else seed)
        self.turn = 0
        self.secret = self.rng.choice(self.primes)
        return "I picked a prime below 60. Guess it; I say higher or lower.", {}

    def step(self, action):
        self.turn += 1
        a = parse(action)
        t = self.turn >= self.max_turns
        if not re.fullmatch(r"\d{1,9}", a):
            return "Invalid: guess a whole number.", 0.0, False, t, {}
        v = int(a)
        if v == self.secret:
            return "Correct!", 1.0, True, False, {"turn": self.turn}
        note = "" if v in self.primes else f" ({v} is not prime.)"
        hint = "higher" if v < self.secret else "lower"
        return f"Go {hint}.{note}", 0.0, False, t, {"turn": self.turn}

    def solution(self):
        lo, hi, out = 0, len(self.primes) - 1, []
        while lo <= hi:
            mid = (lo + hi) // 2
            out.append(str(self.primes[mid]))
            if self.primes[mid] == self.secret:
                break
            if self.primes[mid] < self.secret:
                lo = mid + 1
            else:
                hi = mid - 1
        return out
