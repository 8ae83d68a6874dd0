import random
import re

def parse(action):
    m = re.findall(r"\\boxed\{([^{}]*)\}", str(action))
    return m[-1].strip() if m else str(action).strip()

class WiringEnv:
    def __init__(self, max_turns=10, **kwargs):
        self.max_turns = max_turns
        self.reset()

    def reset(self, seed=None):
        self.rng = random.Random(0 if seed is None else seed)
        self.turn = 0
        self.masks = self.rng.sample(range(1, 16), 3)
        while True:
            self.plan = [i for i in range(3) if self.rng.random() < 0.5]
            flip = 0
            for i in self.plan:
                flip ^= self.masks[i]
            if flip:
                break
        self.lamps = 15 ^ flip
        return (f"Lamps: {self.show()}. Buttons B1, B2, B3 are wired to hidden sets of lamps: pressing a button "
                f"toggles every lamp it is wired to. Press one button per turn to turn all four lamps on."), {}

    def show(self):
        return " ".join(f"L{i + 1}={'on' if self.lamps >> i & 1 else 'off'}" for i in range(4))

    def step(self, action):
        self.turn += 1
        a, t = parse(action).upper().replace(" ", ""), self.turn >= self.max_turns
        if a not in ("B1", "B2", "B3"):
            return "Invalid: answer B1, B2 or B3.", 0.0, False, t, {}
        self.lamps ^= self.masks[int(a[1]) - 1]
        if self.lamps == 15:
            return f"Lamps: {self.show()}. All on, you win!", 1.0, True, False, {"turn": self.turn}
        return f"Lamps: {self.show()}.", 0.0, False, t, {"turn": self.turn}

    def solution(self):
        return [f"B{i + 1}" for i in self.plan]
