import random
import re
import string

def parse(action):
    m = re.findall(r"\\boxed\{([^{}]*)\}", str(action))
    return m[-1].strip() if m else str(action).strip()

ABC = string.ascii_uppercase

class LetterSeqEnv:
    def __init__(self, max_turns=4, **kwargs):
        self.max_turns = max_turns
        self.reset()

    def reset(self, seed=None):
        self.rng = random.Random(0 if seed is None else seed)
        self.turn = 0
        k = self.rng.randint(1, 4)
        start = self.rng.randint(0, 25 - 4 * k)
        self.ans = ABC[start + 4 * k]
        shown = " ".join(ABC[start + i * k] for i in range(4))
        return f"Which letter comes next? {shown} ?", {}

    def step(self, action):
        self.turn += 1
        a = parse(action).upper()
        if not re.fullmatch(r"[A-Z]", a):
            return "Invalid: answer one letter.", 0.0, False, self.turn >= self.max_turns, {}
        if a == self.ans:
            return "Correct!", 1.0, True, False, {"turn": self.turn}
        gap = ABC.index(self.ans) - ABC.index(a)
        return f"Wrong: you are {abs(gap)} letters {'short' if gap > 0 else 'past'}.", 0.0, False, self.turn >= self.max_turns, {}

    def solution(self):
        return [self.ans]
