import random
import re

def parse(action):
    m = re.findall(r"\\boxed\{([^{}]*)\}", str(action))
    return m[-1].strip() if m else str(action).strip()

def is_prime(n):
    return n > 1 and all(n % d for d in range(2, int(n ** 0.5) + 1))

PROPS = [(f"multiple of {k}", lambda n, k=k: n % k == 0) for k in range(3, 10)]
PROPS += [("perfect square", lambda n: int(n ** 0.5) ** 2 == n), ("prime", is_prime),
          ("ends in 7", lambda n: n % 10 == 7), ("digits sum to 9", lambda n: sum(map(int, str(n))) == 9)]
CHECKS = PROPS + [("even", lambda n: n % 2 == 0), ("odd", lambda n: n % 2 == 1), ("multiple of 10", lambda n: n % 10 == 0)]

class OddOneOutEnv:
    def __init__(self, max_turns=2, **kwargs):
        self.max_turns = max_turns
        self.reset()

    def reset(self, seed=None):
        self.rng = random.Random(0 if seed is None else seed)
        self.turn = 0
        while True:
            name, ok = self.rng.choice(PROPS)
            good = [n for n in range(4, 100) if ok(n)]
            bad = [n for n in range(4, 100) if not ok(n)]
            nums = self.rng.sample(good, 5) + [self.rng.choice(bad)]
            self.odd = nums[-1]
            # Reject lists where another property singles out a different number.
            if all(sum(not f(n) for n in nums) != 1 or not f(self.odd) for _, f in CHECKS):
                break
        self.rng.shuffle(nums)
        self.nums = nums
        return f"Five of these numbers share a property; one does not: {', '.join(map(str, nums))}. Which is the odd one out?", {}

    def step(self, action):
        self.turn += 1
        t = self.turn >= self.max_turns
        a = parse(action)
        if not re.fullmatch(r"\d{1,9}", a) or int(a) not in self.nums:
            return "Invalid: answer one of the six numbers.", 0.0, False, t, {}
        if int(a) == self.odd:
            return "Correct!", 1.0, True, False, {"turn": self.turn}
        return "Wrong.", 0.0, True, False, {"turn": self.turn}

    def solution(self):
        return [str(self.odd)]
