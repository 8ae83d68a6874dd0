import random
import re
import string

def parse(action):
    m = re.findall(r"\\boxed\{([^{}]*)\}", str(action))
    return m[-1].strip() if m else str(action).strip()

ABC = string.ascii_uppercase
RULES = {"reverse": lambda s: s[::-1],
         "rotate left": lambda s: s[1:] + s[0],
         "rotate right": lambda s: s[-1] + s[:-1],
         "swap pairs": lambda s: "".join(s[i + 1] + s[i] if i + 1 < len(s) else s[i] for i in range(0, len(s), 2)),
         "shift +1": lambda s: "".join(ABC[(ABC.index(c) + 1) % 26] for c in s),
         "shift -2": lambda s: "".join(ABC[(ABC.index(c) - 2) % 26] for c in s),
         "sort": lambda s: "".join(sorted(s)),
         "swap ends": lambda s: s[-1] + s[1:-1] + s[0],
         "double first": lambda s: s[0] + s,
         "drop last": lambda s: s[:-1]}

class StringRuleEnv:
    def __init__(self, max_turns=3, **kwargs):
        self.max_turns = max_turns
        self.reset()

    def reset(self, seed=None):
        self.rng = random.Random(0 if seed is None else seed)
        self.turn = 0
        word = lambda: "".join(self.rng.sample(ABC, self.rng.randint(4, 5)))
        while True:
            self.rule = self.rng.choice(sorted(RULES))
            shown, self.query = [word(), word()], word()
            self.ans = RULES[self.rule](self.query)
            fits = [r for r in RULES if all(RULES[r](w) == RULES[self.rule](w) for w in shown)]
            if all(RULES[r](self.query) == self.ans for r in fits) and self.ans != self.query:
                break
        ex = "; ".join(f"{w} -> {RULES[self.rule](w)}" for w in shown)
        return f"One rule turns each word into another: {ex}. Apply the same rule to {self.query}.", {}

    def step(self, action):
        self.turn += 1
        t = self.turn >= self.max_turns
        a = parse(action).upper().replace(" ", "")
        if not re.fullmatch(r"[A-Z]{1,12}", a):
            return "Invalid: answer letters only.", 0.0, False, t, {}
        if a == self.ans:
            return "Correct!", 1.0, True, False, {"turn": self.turn}
        return "Wrong. Compare the examples letter by letter.", 0.0, False, t, {"turn": self.turn}

    def solution(self):
        return [self.ans]
