import random
import re

def parse(action):
    m = re.findall(r"\\boxed\{([^{}]*)\}", str(action))
    return m[-1].strip() if m else str(action).strip()

class DominoesEnv:
    def __init__(self, max_turns=3, **kwargs):
        self.max_turns = max_turns
        self.reset()

    def reset(self, seed=None):
        self.rng = random.Random(0 if seed is None else seed)
        self.turn = 0
        want = self.rng.randint(2, 6)
        while True:
            pos, p = [], 0
            for _ in range(7):
                pos.append(p)
                p += self.rng.randint(1, 4)
            self.dominoes = [(x, self.rng.randint(1, 4)) for x in pos]
            self.ans = self.fallen()
            if self.ans == want:
                break
        text = " ".join(f"{x}:{h}" for x, h in self.dominoes)
        return (f"Dominoes on a line, as position:height: {text}. A domino at position p with height h falls to the right "
                f"and knocks over every domino at positions p+1 to p+h, which then fall too. You push the first one. "
                f"How many dominoes fall in total (count the first)?"), {}

    def fallen(self):
        reach, count = -1, 0
        for i, (x, h) in enumerate(self.dominoes):
            if i > 0 and x > reach:
                break
            reach, count = max(reach, x + h), count + 1
        return count

    def step(self, action):
        self.turn += 1
        a = parse(action)
        t = self.turn >= self.max_turns
        if not re.fullmatch(r"\d{1,9}", a):
            return "Invalid: answer a whole number.", 0.0, False, t, {}
        if int(a) == self.ans:
            return "Correct!", 1.0, True, False, {"turn": self.turn}
        return f"Wrong: {'too many' if int(a) > self.ans else 'too few'}.", 0.0, False, t, {"turn": self.turn}

    def solution(self):
        return [str(self.ans)]
