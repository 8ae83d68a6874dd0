import random
import re

def parse(action):
    m = re.findall(r"\\boxed\{([^{}]*)\}", str(action))
    return m[-1].strip() if m else str(action).strip()

class ClockAngleEnv:
    def __init__(self, max_turns=3, **kwargs):
        self.max_turns = max_turns
        self.reset()

    def reset(self, seed=None):
        self.rng = random.Random(0 if seed is None else seed)
        self.turn = 0
        h, m = self.rng.randint(1, 12), self.rng.choice(range(0, 60, 2))
        diff = abs(60 * (h % 12) - 11 * m) // 2  # hour hand 30h + m/2 degrees, minute hand 6m
        self.ans = min(diff % 360, 360 - diff % 360)
        return f"An analog clock shows {h}:{m:02d}. What is the smaller angle between the hour and minute hands, in degrees?", {}

    def step(self, action):
        self.turn += 1
        t = self.turn >= self.max_turns
        a = parse(action).replace("°", "").replace("^\\circ", "").replace("degrees", "").strip()
        if not re.fullmatch(r"\d{1,9}", a):
            return "Invalid: answer a whole number of degrees.", 0.0, False, t, {}
        if int(a) == self.ans:
            return "Correct!", 1.0, True, False, {"turn": self.turn}
        return f"Wrong: {a} is {'too big' if int(a) > self.ans else 'too small'}.", 0.0, False, t, {"turn": self.turn}

    def solution(self):
        return [str(self.ans)]
