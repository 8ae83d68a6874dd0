import random
import re

def parse(action):
    m = re.findall(r"\\boxed\{([^{}]*)\}", str(action))
    return m[-1].strip() if m else str(action).strip()

COLORS = ["red", "blue", "green", "yellow"]

class CardCluesEnv:
    def __init__(self, max_turns=3, **kwargs):
        self.max_turns = max_turns
        self.reset()

    def reset(self, seed=None):
        self.rng = random.Random(0 if seed is None else seed)
        self.turn = 0
        deck = [(c, n) for c in COLORS for n in range(1, 7)]
        while True:
            self.cards = sorted(self.rng.sample(deck, 8), key=lambda x: (COLORS.index(x[0]), x[1]))
            self.secret = self.rng.choice(self.cards)
            self.clues, live = [], list(self.cards)
            while len(live) > 1:
                clue = self.clue()
                if not clue[1](*self.secret):
                    continue
                rest = [x for x in live if clue[1](*x)]
                if len(rest) < len(live):
                    self.clues.append(clue)
                    live = rest
            for c in list(self.clues):
                others = [d for d in self.clues if d is not c]
                if sum(all(d[1](*x) for d in others) for x in self.cards) == 1:
                    self.clues = others
            if len(self.clues) >= 3:
                break
        listing = ", ".join(f"{c} {n}" for c, n in self.cards)
        text = " ".join(f"({i + 1}) {c[0]}" for i, c in enumerate(self.clues))
        return (f"I hold one of these cards: {listing}. Clues: {text} Which card is it? Answer color and number, e.g. red 3."), {}

    def clue(self):
        c, n = self.rng.choice(COLORS), self.rng.randint(2, 5)
        kind = self.rng.randrange(6)
        if kind == 0:
            return f"It is not {c}.", lambda x, y: x != c
        if kind == 1:
            return f"Its number is {'even' if n % 2 == 0 else 'odd'}.", lambda x, y: y % 2 == n % 2
        if kind == 2:
            return f"Its number is greater than {n}.", lambda x, y: y > n
        if kind == 3:
            return f"Its number is less than {n}.", lambda x, y: y < n
        if kind == 4:
            return f"It is {c} or its number is {n}.", lambda x, y: x == c or y == n
        return f"If it is {c}, its number is greater than {n}.", lambda x, y: x != c or y > n

    def step(self, action):
        self.turn += 1
        t = self.turn >= self.max_turns
        a = parse(action).lower()
        m = re.fullmatch(r"(red|blue|green|yellow)[\s,]*(\d)", a)
        if not m or (m.group(1), int(m.group(2))) not in self.cards:
            return "Invalid: answer one of the listed cards, e.g. red 3.", 0.0, False, t, {}
        card = (m.group(1), int(m.group(2)))
        if card == self.secret:
            return "Correct!", 1.0, True, False, {"turn": self.turn}
        bad = next(i for i, c in enumerate(self.clues) if not c[1](*card))
        return f"Wrong: clue ({bad + 1}) rules out {card[0]} {card[1]}.", 0.0, False, t, {"turn": self.turn}

    def solution(self):
        return [f"{self.secret[0]} {self.secret[1]}"]
