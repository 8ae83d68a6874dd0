import math
import random
import re

def parse(action):
    m = re.findall(r"\\boxed\{([^{}]*)\}", str(action))
    return m[-1].strip() if m else str(action).strip()

TEETH = [8, 10, 12, 15, 16, 20, 24, 30, 40]

class GearTrainEnv:
    def __init__(self, max_turns=4, **kwargs):
        self.max_turns = max_turns
        self.reset()

    def reset(self, seed=None):
        self.rng = random.Random(0 if seed is None else seed)
        self.turn = 0
        n = self.rng.randint(3, 5)
        self.teeth = [self.rng.choice(TEETH) for _ in range(n)]
        first, last = self.teeth[0], self.teeth[-1]
        step = last // math.gcd(first, last)
        self.rpm = step * self.rng.randint(1, max(1, 120 // step))
        self.spin = self.rng.choice(["cw", "ccw"])
        self.ans_rpm = self.rpm * first // last
        self.ans_dir = self.spin if n % 2 else ("ccw" if self.spin == "cw" else "cw")
        chain = " - ".join(f"G{i + 1} ({t} teeth)" for i, t in enumerate(self.teeth))
        word = "clockwise" if self.spin == "cw" else "counterclockwise"
        return (f"Gears in a row, each meshing with the next: {chain}. G1 turns {word} at {self.rpm} rpm. "
                f"How does G{n} turn? Answer direction (cw or ccw) and rpm, e.g. ccw 45."), {}

    def step(self, action):
        self.turn += 1
        t = self.turn >= self.max_turns
        a = parse(action).lower().replace("anticlockwise", "ccw").replace("counterclockwise", "ccw")
        a = a.replace("counter-clockwise", "ccw").replace("clockwise", "cw")
        m = re.fullmatch(r"(ccw|cw)[\s,]*(\d{1,9})(\s*rpm)?", a)
        if not m:
            return "Invalid: answer cw or ccw and a whole rpm, e.g. ccw 45.", 0.0, False, t, {}
        d_ok, r_ok = m.group(1) == self.ans_dir, int(m.group(2)) == self.ans_rpm
        if d_ok and r_ok:
            return "Correct!", 1.0, True, False, {"turn": self.turn}
        msg = ("Direction right" if d_ok else "Direction wrong") + ", " + ("speed right." if r_ok else "speed wrong.")
        return msg, 0.0, False, t, {"turn": self.turn}

    def solution(self):
        return [f"{self.ans_dir} {self.ans_rpm}"]
