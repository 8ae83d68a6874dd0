import random
import re

def parse(action):
    m = re.findall(r"\\boxed\{([^{}]*)\}", str(action))
    return m[-1].strip() if m else str(action).strip()

class TakeAwayEnv:
    def __init__(self, max_turns=10, **kwargs):
        self.max_turns = max_turns
        self.reset()

    def reset(self, seed=None):
        self.rng = random.Random(0 if seed is None else seed)
        self.turn = 0
        self.k = self.rng.randint(2, 5)
        self.misere = self.rng.random() < 0.5
        while True:
            self.pile = self.rng.randint(8, 24)
            if self.best(self.pile):
                break
        rule = "whoever takes the last stone loses" if self.misere else "whoever takes the last stone wins"
        return (f"A pile has {self.pile} stones. We take turns removing 1 to {self.k} stones; {rule}. "
                f"You go first. How many stones do you take?"), {}

    def best(self, pile):
        # The winning take from this pile, or 0 when every take loses against best play.
        return (pile - self.misere) % (self.k + 1)

    def reply(self, pile):
        return min(pile, self.best(pile) or 1)

    def step(self, action):
        self.turn += 1
        t = self.turn >= self.max_turns
        a = parse(action)
        if not re.fullmatch(r"\d{1,9}", a) or not 1 <= int(a) <= min(self.k, self.pile):
            return f"Invalid: take 1 to {min(self.k, self.pile)} stones. Pile: {self.pile}.", 0.0, False, t, {}
        self.pile -= int(a)
        if self.pile == 0:
            if self.misere:
                return "You took the last stone. You lose.", 0.0, True, False, {"turn": self.turn}
            return "You took the last stone. You win!", 1.0, True, False, {"turn": self.turn}
        left, mine = self.pile, self.reply(self.pile)
        self.pile -= mine
        if self.pile == 0:
            if self.misere:
                return f"You leave {left}. I take {mine}, the last stone. You win!", 1.0, True, False, {"turn": self.turn}
            return f"You leave {left}. I take {mine}, the last stone. I win.", 0.0, True, False, {"turn": self.turn}
        return f"You leave {left}. I take {mine}. Pile: {self.pile}. Your move.", 0.0, False, t, {"turn": self.turn}

    def solution(self):
        pile, out = self.pile, []
        while pile:
            take = min(pile, self.best(pile) or 1)
            out.append(str(take))
            pile -= take
            if pile:
                pile -= self.reply(pile)
        return out
