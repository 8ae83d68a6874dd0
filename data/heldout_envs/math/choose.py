import math
import random
import re

def parse(action):
    m = re.findall(r"\\boxed\{([^{}]*)\}", str(action))
    return m[-1].strip() if m else str(action).strip()

THINGS = ["books", "students", "flags", "songs", "cards", "players"]

class ChooseEnv:
    def __init__(self, max_turns=4, **kwargs):
        self.max_turns = max_turns
        self.reset()

    def reset(self, seed=None):
        self.rng = random.Random(0 if seed is None else seed)
        self.turn = 0
        n, k = self.rng.randint(4, 10), self.rng.randint(2, 4)
        what = self.rng.choice(THINGS)
        if self.rng.random() < 0.5:
            self.ans = math.comb(n, k)
            q = f"In how many ways can you choose a group of {k} from {n} different {what} (order does not matter)?"
        else:
            self.ans = math.perm(n, k)
            places = ["first", "second", "third", "fourth"][:k]
            names = ", ".join(places[:-1]) + " and " + places[-1]
            q = f"In how many ways can you award {names} place to {k} of {n} different {what}?"
        return q + " Answer a whole number.", {}

    def step(self, action):
        self.turn += 1
        t = self.turn >= self.max_turns
        a = parse(action).replace(",", "")
        if not re.fullmatch(r"\d{1,12}", a):
            return "Invalid: answer a whole number.", 0.0, False, t, {}
        if int(a) == self.ans:
            return "Correct!", 1.0, True, False, {"turn": self.turn}
        return f"Wrong: {a} is {'too big' if int(a) > self.ans else 'too small'}.", 0.0, False, t, {"turn": self.turn}

    def solution(self):
        return [str(self.ans)]
