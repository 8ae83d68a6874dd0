import itertools
import random
import re

def parse(action):
    m = re.findall(r"\\boxed\{([^{}]*)\}", str(action))
    return m[-1].strip() if m else str(action).strip()

PEOPLE, COLORS, PETS = ["Ann", "Bob", "Cid"], ["red", "green", "blue"], ["cat", "dog", "fish"]
WORLDS = [(p, c, q) for p in itertools.permutations(PEOPLE) for c in itertools.permutations(COLORS)
          for q in itertools.permutations(PETS)]

def house(world, x):
    for part in world:
        if x in part:
            return part.index(x)

def group(x):
    return 0 if x in PEOPLE else 1 if x in COLORS else 2

def noun(x):
    return f"{x}'s house" if x in PEOPLE else f"the {x} house" if x in COLORS else f"the {x}'s house"

def cap(text):
    return text[0].upper() + text[1:]

def make_clue(kind, x, y, k):
    pair = (group(x), group(y))
    if kind == "same" and pair in ((0, 1), (0, 2), (1, 2)):
        text = {(0, 1): f"{x} lives in the {y} house.", (0, 2): f"{x} owns the {y}.",
                (1, 2): f"The {y} lives in the {x} house."}[pair]
        return text, lambda w: house(w, x) == house(w, y)
    if kind == "diff" and pair in ((0, 1), (0, 2), (1, 2)):
        text = {(0, 1): f"{x} does not live in the {y} house.", (0, 2): f"{x} does not own the {y}.",
                (1, 2): f"The {y} is not in the {x} house."}[pair]
        return text, lambda w: house(w, x) != house(w, y)
    if kind == "left":
        return f"{cap(noun(x))} is directly left of {noun(y)}.", lambda w: house(w, x) + 1 == house(w, y)
    if kind == "next":
        return f"{cap(noun(x))} and {noun(y)} are next to each other.", lambda w: abs(house(w, x) - house(w, y)) == 1
    if kind == "pos":
        return f"{cap(noun(x))} is house {k + 1}.", lambda w: house(w, x) == k
    if kind == "edge":
        return f"{cap(noun(x))} is not the middle house.", lambda w: house(w, x) != 1
    return None

class HousesEnv:
    def __init__(self, max_turns=2, **kwargs):
        self.max_turns = max_turns
        self.reset()

    def reset(self, seed=None):
        self.rng = random.Random(0 if seed is None else seed)
        self.turn = 0
        self.world = self.rng.choice(WORLDS)
        everything = PEOPLE + COLORS + PETS
        clues, live = [], list(WORLDS)
        while len(live) > 1:
            kind = self.rng.choice(["same", "same", "diff", "left", "left", "next", "pos", "edge"])
            x, y = self.rng.sample(everything, 2)
            if group(x) > group(y) and kind in ("same", "diff"):
                x, y = y, x
            clue = make_clue(kind, x, y, self.rng.randrange(3))
            if clue is None or not clue[1](self.world):
                continue
            rest = [w for w in live if clue[1](w)]
            if len(rest) < len(live):
                clues.append(clue)
                live = rest
        for c in list(clues):
            others = [d for d in clues if d is not c]
            if sum(all(d[1](w) for d in others) for w in WORLDS) == 1:
                clues = others
        self.ans = ",".join(self.world[0])
        text = " ".join(c[0] for c in clues)
        return (f"Three houses in a row, numbered 1-3 from left to right. Ann, Bob and Cid live in them, one each; "
                f"the houses are red, green and blue; the pets are a cat, a dog and a fish, one per house. {text} "
                f"Who lives in houses 1, 2, 3? Only one try. Answer e.g. Bob,Cid,Ann."), {}

    def step(self, action):
        self.turn += 1
        names = [n.strip().title() for n in re.split(r"[,\s]+", parse(action)) if n.strip()]
        if sorted(names) != PEOPLE:
            return "Invalid: list Ann, Bob and Cid once each in house order, e.g. Bob,Cid,Ann.", 0.0, False, self.turn >= self.max_turns, {}
        if ",".join(names) == self.ans:
            return "Correct!", 1.0, True, False, {"turn": self.turn}
        return "Wrong.", 0.0, True, False, {"turn": self.turn}

    def solution(self):
        return [self.ans]
