import random
import re

def parse(action):
    m = re.findall(r"\\boxed\{([^{}]*)\}", str(action))
    return m[-1].strip() if m else str(action).strip()

class ScheduleEnv:
    def __init__(self, max_turns=6, **kwargs):
        self.max_turns = max_turns
        self.reset()

    def reset(self, seed=None):
        self.rng = random.Random(0 if seed is None else seed)
        self.turn = 0
        self.jobs = dict(zip("ABCD", self.rng.sample(range(1, 10), 4)))
        self.best = "".join(sorted(self.jobs, key=self.jobs.get))
        text = ", ".join(f"{j}={d}h" for j, d in self.jobs.items())
        return f"One machine runs jobs one at a time: {text}. Order them to minimise the sum of finish times, e.g. DBAC.", {}

    def total(self, order):
        done, s = 0, 0
        for j in order:
            done += self.jobs[j]
            s += done
        return s

    def step(self, action):
        self.turn += 1
        t = self.turn >= self.max_turns
        a = re.sub(r"[^A-D]", "", parse(action).upper())
        if sorted(a) != list("ABCD"):
            return "Invalid: give each job A-D once, e.g. DBAC.", 0.0, False, t, {}
        if self.total(a) == self.total(self.best):
            return "Correct! Optimal order.", 1.0, True, False, {"turn": self.turn}
        return f"Sum of finish times {self.total(a)}. A better order exists.", 0.0, False, t, {}

    def solution(self):
        return [self.best]
