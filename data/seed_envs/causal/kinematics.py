import random
import re

def parse(action):
    m = re.findall(r"\\boxed\{([^{}]*)\}", str(action))
    return m[-1].strip() if m else str(action).strip()

class KinematicsEnv:
    def __init__(self, max_turns=5, **kwargs):
        self.max_turns = max_turns
        self.reset()

    def reset(self, seed=None):
        self.rng = random.Random(0 if seed is None else seed)
        self.turn = 0
        v0, a, t = self.rng.randint(0, 10), self.rng.choice([2, 4, 6]), self.rng.randint(1, 6)
        start = f"A cart starts at {v0} m/s and speeds up at {a} m/s^2 for {t} s."
        if self.rng.random() < 0.5:
            self.ans, obs = v0 + a * t, start + " Final speed in m/s? (v = v0 + a*t)"
        else:
            self.ans, obs = v0 * t + a * t * t // 2, start + " Distance in m? (s = v0*t + a*t^2/2)"
        return obs, {}

    def step(self, action):
        self.turn += 1
        a = parse(action).split()[0] if parse(action) else ""
        t = self.turn >= self.max_turns
        if not re.fullmatch(r"\d{1,9}", a):
            return "Invalid: answer a whole number.", 0.0, False, t, {}
        if int(a) == self.ans:
            return "Correct!", 1.0, True, False, {"turn": self.turn}
        return f"Wrong: {a} is {'too big' if int(a) > self.ans else 'too small'}.", 0.0, False, t, {}

    def solution(self):
        return [str(self.ans)]
