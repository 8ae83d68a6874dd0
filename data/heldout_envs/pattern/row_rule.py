import random
import re

def parse(action):
    m = re.findall(r"\\boxed\{([^{}]*)\}", str(action))
    return m[-1].strip() if m else str(action).strip()

OPS = {"a+b": lambda a, b: a + b, "a-b": lambda a, b: a - b, "a*b": lambda a, b: a * b,
       "2a+b": lambda a, b: 2 * a + b, "a*b-a": lambda a, b: a * b - a, "a+b+1": lambda a, b: a + b + 1,
       "(a+b)*2": lambda a, b: (a + b) * 2, "a*a+b": lambda a, b: a * a + b}

class RowRuleEnv:
    def __init__(self, max_turns=3, **kwargs):
        self.max_turns = max_turns
        self.reset()

    def reset(self, seed=None):
        self.rng = random.Random(0 if seed is None else seed)
        self.turn = 0
        while True:
            self.op = self.rng.choice(sorted(OPS))
            rows = [(self.rng.randint(1, 9), self.rng.randint(1, 9)) for _ in range(3)]
            f = OPS[self.op]
            fits = [o for o in OPS if all(OPS[o](a, b) == f(a, b) for a, b in rows[:2])]
            if len(set(OPS[o](*rows[2]) for o in fits)) == 1:
                break
        self.ans = f(*rows[2])
        lines = [f"{a} {b} {f(a, b)}" for a, b in rows[:2]] + [f"{rows[2][0]} {rows[2][1]} ?"]
        return f"Each row follows the same rule from its first two numbers to the third: {' / '.join(lines)}. What is ?", {}

    def step(self, action):
        self.turn += 1
        t = self.turn >= self.max_turns
        a = parse(action)
        if not re.fullmatch(r"-?\d{1,9}", a):
            return "Invalid: answer an integer.", 0.0, False, t, {}
        if int(a) == self.ans:
            return "Correct!", 1.0, True, False, {"turn": self.turn}
        return "Wrong. Find a rule that fits both complete rows.", 0.0, False, t, {"turn": self.turn}

    def solution(self):
        return [str(self.ans)]
