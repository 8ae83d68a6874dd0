import random
import re

def parse(action):
    m = re.findall(r"\\boxed\{([^{}]*)\}", str(action))
    return m[-1].strip() if m else str(action).strip()

class MachineEnv:
    def __init__(self, max_turns=6, **kwargs):
        self.max_turns = max_turns
        self.reset()

    def reset(self, seed=None):
        self.rng = random.Random(0 if seed is None else seed)
        self.turn = 0
        self.a, self.b = self.rng.randint(1, 6), self.rng.randint(-5, 5)
        return ("A machine maps input x to output a*x + b (hidden integers a, b). "
                "Send a number x to test it, or answer a,b."), {}

    def step(self, action):
        self.turn += 1
        t = self.turn >= self.max_turns
        a = parse(action).replace(" ", "")
        if re.fullmatch(r"-?\d{1,9}", a):
            x = int(a)
            return f"Input {x} gives output {self.a * x + self.b}.", 0.0, False, t, {"turn": self.turn}
        if not re.fullmatch(r"-?\d{1,9},-?\d{1,9}", a):
            return "Invalid: send a number, or answer a,b like 3,-2.", 0.0, False, t, {}
        if a == f"{self.a},{self.b}":
            return "Correct! You found the rule.", 1.0, True, False, {"turn": self.turn}
        return "Wrong rule. Run more tests.", 0.0, False, t, {"turn": self.turn}

    def solution(self):
        return ["0", "1", f"{self.a},{self.b}"]
