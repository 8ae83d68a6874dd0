import random
import re

def parse(action):
    m = re.findall(r"\\boxed\{([^{}]*)\}", str(action))
    return m[-1].strip() if m else str(action).strip()

class BinPackingEnv:
    def __init__(self, max_turns=5, **kwargs):
        self.max_turns = max_turns
        self.reset()

    def reset(self, seed=None):
        self.rng = random.Random(0 if seed is None else seed)
        self.turn = 0
        self.cap = self.rng.choice([10, 12])
        self.items = sorted((self.rng.randint(2, self.cap - 3) for _ in range(self.rng.randint(5, 7))), reverse=True)
        self.best = self.pack()
        return (f"Boxes hold at most {self.cap} kg each. Pack these parcels (kg) into as few boxes as possible: "
                f"{', '.join(map(str, self.items))}. Answer the boxes separated by | with parcels joined by +, e.g. 7+3|5+4."), {}

    def pack(self):
        # Fewest boxes by search over subsets (at most 7 parcels): best[mask] = fewest boxes for those parcels.
        n = len(self.items)
        fits = {m: sum(self.items[i] for i in range(n) if m >> i & 1) <= self.cap for m in range(1, 1 << n)}
        best = {0: []}
        for mask in range(1, 1 << n):
            low = mask & -mask
            sub, choice = mask, None
            while sub:
                if sub & low and fits[sub] and (choice is None or len(best[mask ^ sub]) + 1 < len(choice)):
                    choice = best[mask ^ sub] + [sub]
                sub = (sub - 1) & mask
            best[mask] = choice
        return [[self.items[i] for i in range(n) if m >> i & 1] for m in best[(1 << n) - 1]]

    def step(self, action):
        self.turn += 1
        t = self.turn >= self.max_turns
        boxes = [[int(x) for x in re.findall(r"\d{1,9}", b)] for b in re.split(r"[|;/]", parse(action))]
        boxes = [b for b in boxes if b]
        if not boxes or sorted(x for b in boxes for x in b) != sorted(self.items):
            return f"Invalid: use every parcel {', '.join(map(str, self.items))} exactly once, e.g. 7+3|5+4.", 0.0, False, t, {}
        heavy = [b for b in boxes if sum(b) > self.cap]
        if heavy:
            return f"Box {'+'.join(map(str, heavy[0]))} weighs {sum(heavy[0])} kg, over {self.cap}.", 0.0, False, t, {}
        if len(boxes) == len(self.best):
            return f"Correct! {len(boxes)} boxes is the minimum.", 1.0, True, False, {"turn": self.turn}
        return f"That uses {len(boxes)} boxes. Fewer is possible.", 0.0, False, t, {"turn": self.turn}

    def solution(self):
        return ["|".join("+".join(map(str, b)) for b in self.best)]
