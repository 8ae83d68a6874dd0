import random
import re

def parse(action):
    m = re.findall(r"\\boxed\{([^{}]*)\}", str(action))
    return m[-1].strip() if m else str(action).strip()

SAYS = {"{o} is a knight": lambda me, o: o, "{o} is a knave": lambda me, o: not o,
        "we are both knaves": lambda me, o: not me and not o,
        "we are the same kind": lambda me, o: me == o,
        "we are different kinds": lambda me, o: me != o}

class KnightsEnv:
    def __init__(self, max_turns=4, **kwargs):
        self.max_turns = max_turns
        self.reset()

    def reset(self, seed=None):
        self.rng = random.Random(0 if seed is None else seed)
        self.turn = 0
        while True:
            sa, sb = self.rng.choice(list(SAYS)), self.rng.choice(list(SAYS))
            fits = [(a, b) for a in (True, False) for b in (True, False)
                    if SAYS[sa](a, b) == a and SAYS[sb](b, a) == b]
            if len(fits) == 1:
                break
        self.ans = "".join("K" if x else "N" for x in fits[0])
        return (f"Knights always tell the truth, knaves always lie. A says: {sa.format(o='B')}. "
                f"B says: {sb.format(o='A')}. Answer A,B as K or N, e.g. KN."), {}

    def step(self, action):
        self.turn += 1
        a = parse(action).upper().replace(",", "").replace(" ", "")
        if not re.fullmatch(r"[KN]{2}", a):
            return "Invalid: answer two letters K or N, e.g. KN.", 0.0, False, self.turn >= self.max_turns, {}
        if a == self.ans:
            return "Correct!", 1.0, True, False, {"turn": self.turn}
        return "Wrong.", 0.0, True, False, {"turn": self.turn}

    def solution(self):
        return [self.ans]
