import random
import re

def parse(action):
    m = re.findall(r"\\boxed\{([^{}]*)\}", str(action))
    return m[-1].strip() if m else str(action).strip()

class TankEnv:
    def __init__(self, max_turns=4, **kwargs):
        self.max_turns = max_turns
        self.reset()

    def reset(self, seed=None):
        self.rng = random.Random(0 if seed is None else seed)
        self.turn = 0
        if self.rng.random() < 0.5:
            inflow, drain = self.rng.randint(4, 12), 0
            while drain == 0 or drain >= inflow:
                drain = self.rng.randint(1, 10)
            delay, start, rest = self.rng.randint(0, 5), self.rng.randint(0, 40), self.rng.randint(2, 12)
            cap = start + inflow * delay + (inflow - drain) * rest
            self.ans, goal = delay + rest, f"The tank holds at most {cap} liters. After how many minutes from the start is it full?"
        else:
            while True:
                inflow, drain = self.rng.randint(1, 9), self.rng.randint(3, 12)
                delay, rest = self.rng.randint(0, 5), self.rng.randint(2, 12)
                start = (drain - inflow) * rest - inflow * delay
                if drain > inflow and start > 0:
                    break
            self.ans, goal = delay + rest, "After how many minutes from the start is it empty?"
        lead = f"For the first {delay} minute{'s' if delay > 1 else ''} the drain is closed; then it opens. " if delay else "The drain is open from the start. "
        return (f"A tank starts with {start} liters. A pipe adds {inflow} L/min; the open drain removes {drain} L/min. "
                f"{lead}{goal}"), {}

    def step(self, action):
        self.turn += 1
        a = parse(action).lower().replace("minutes", "").replace("min", "").strip()
        t = self.turn >= self.max_turns
        if not re.fullmatch(r"\d{1,9}", a):
            return "Invalid: answer a whole number of minutes.", 0.0, False, t, {}
        if int(a) == self.ans:
            return "Correct!", 1.0, True, False, {"turn": self.turn}
        return f"Wrong: {a} is {'too late' if int(a) > self.ans else 'too early'}.", 0.0, False, t, {"turn": self.turn}

    def solution(self):
        return [str(self.ans)]
