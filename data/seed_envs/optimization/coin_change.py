import random
import re

def parse(action):
    m = re.findall(r"\\boxed\{([^{}]*)\}", str(action))
    return m[-1].strip() if m else str(action).strip()

class CoinChangeEnv:
    def __init__(self, max_turns=6, **kwargs):
        self.max_turns = max_turns
        self.reset()

    def reset(self, seed=None):
        self.rng = random.Random(0 if seed is None else seed)
        self.turn = 0
        self.coins = [1] + sorted(self.rng.sample(range(3, 10), 2))
        self.amount = self.rng.randint(8, 20)
        best = [[]]
        for n in range(1, self.amount + 1):
            best.append(min((best[n - c] + [c] for c in self.coins if c <= n), key=len))
        self.best = best[-1]
        return f"Coins: {', '.join(map(str, self.coins))} (unlimited). Pay exactly {self.amount} with the fewest coins. Answer e.g. 5+5+1.", {}

    def step(self, action):
        self.turn += 1
        t = self.turn >= self.max_turns
        used = [int(x) for x in re.findall(r"\d{1,9}", parse(action))]
        if not used or any(c not in self.coins for c in used):
            return f"Invalid: use only coins {self.coins}, e.g. 5+5+1.", 0.0, False, t, {}
        if sum(used) != self.amount:
            return f"Those coins sum to {sum(used)}, not {self.amount}.", 0.0, False, t, {}
        if len(used) == len(self.best):
            return "Correct! Fewest coins.", 1.0, True, False, {"turn": self.turn}
        return f"That uses {len(used)} coins. Fewer is possible.", 0.0, False, t, {}

    def solution(self):
        return ["+".join(map(str, self.best))]
