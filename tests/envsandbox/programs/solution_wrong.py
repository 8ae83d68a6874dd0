# The solution gate (issue 17): a one-shot guess of a seeded digit; solution() is off by one
# (the episode ends with reward 0). Rejected: solution_does_not_win.
import random
import re


class DigitEnv:
    def __init__(self, max_turns=5):
        self.max_turns = max_turns
        self.target = 0

    def reset(self, seed=None):
        self.target = random.Random(seed).randint(1, 9)
        return "Guess the digit (1-9) in \\boxed{}.", {}

    def step(self, action):
        m = re.search(r"\\boxed\{(.*?)\}", action)
        guess = (m.group(1) if m else action).strip()
        if guess == str(self.target):
            return "Correct!", 1.0, True, False, {}
        return "Wrong.", 0.0, True, False, {}

    def solution(self):
        return [str(self.target % 9 + 1)]
