import random
import re

def parse(action):
    m = re.findall(r"\\boxed\{([^{}]*)\}", str(action))
    return m[-1].strip() if m else str(action).strip()

class AlternatingEnv:
    def __init__(self, max_turns=4, **kwargs):
        self.max_turns = max_turns
        self.reset()

    def reset(self, seed=None):
        self.rng = random.Random(0 if seed is None else seed)
        self.turn = 0
        while True:
            a, b, c = self.rng.randint(1, 9), self.rng.randint(2, 3), self.rng.randint(1, 9)
            ops = self.rng.choice([[("+", a), ("*", b)], [("*", b), ("+", a)], [("+", a), ("-", c)], [("*", b), ("-", c)]])
            seq = [self.rng.randint(1, 6)]
            for i in range(6):
                op, v = ops[i % 2]
                seq.append(seq[-1] + v if op == "+" else seq[-1] * v if op == "*" else seq[-1] - v)
            if len(set(seq)) == 7:
                break
        self.ans = seq[-1]
        return f"Two operations take turns to make this sequence: {', '.join(map(str, seq[:-1]))}, ? Give the next term.", {}

    def step(self, action):
        self.turn += 1
        t = self.turn >= self.max_turns
        a = parse(action).replace(",", "")
        if not re.fullmatch(r"-?\d{1,9}", a):
            return "Invalid: answer an integer.", 0.0, False, t, {}
        if int(a) == self.ans:
            return "Correct!", 1.0, True, False, {"turn": self.turn}
        return "Wrong. Look at odd and even steps separately.", 0.0, False, t, {"turn": self.turn}

    def solution(self):
        return [str(self.ans)]
