import random
import re

def parse(action):
    m = re.findall(r"\\boxed\{([^{}]*)\}", str(action))
    return m[-1].strip() if m else str(action).strip()

class OhmEnv:
    def __init__(self, max_turns=4, **kwargs):
        self.max_turns = max_turns
        self.reset()

    def reset(self, seed=None):
        self.rng = random.Random(0 if seed is None else seed)
        self.turn = 0
        i, r = self.rng.randint(1, 9), self.rng.randint(2, 20)
        asks = [(f"A {r} ohm resistor carries {i} A. What voltage (V) is across it?", i * r),
                (f"{i * r} V is across a {r} ohm resistor. What current (A) flows?", i),
                (f"{i * r} V drives {i} A through a resistor. What is its resistance (ohm)?", r)]
        obs, self.ans = self.rng.choice(asks)
        return "Use Ohm's law V = I * R. " + obs + " Answer a number.", {}

    def step(self, action):
        self.turn += 1
        if parse(action) == str(self.ans):
            return "Correct!", 1.0, True, False, {"turn": self.turn}
        return "Wrong. Try again.", 0.0, False, self.turn >= self.max_turns, {"turn": self.turn}

    def solution(self):
        return [str(self.ans)]
