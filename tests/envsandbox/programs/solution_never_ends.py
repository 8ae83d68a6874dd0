# The solution gate (issue 17): the digit must be confirmed with "done" after it, and solution() omits
# that; its answers leave the episode running. Rejected: solution_does_not_win.
import random
import re


class ConfirmEnv:
    def __init__(self, max_turns=5):
        self.max_turns = max_turns
        self.target = 0
        self.guess = None
        self.turns = 0

    def reset(self, seed=None):
        self.target = random.Random(seed).randint(1, 9)
        self.guess = None
        self.turns = 0
        return "Guess the digit (1-9) in \\boxed{}, then answer \\boxed{done}.", {}

    def step(self, action):
        self.turns += 1
        m = re.search(r"\\boxed\{(.*?)\}", action)
        text = (m.group(1) if m else action).strip()
        if text == "done":
            won = self.guess == str(self.target)
            return ("Correct!" if won else "Wrong."), (1.0 if won else 0.0), True, False, {}
        self.guess = text
        return "Noted; answer done to confirm.", 0.0, False, self.turns >= self.max_turns, {}

    def solution(self):
        return [str(self.target)]
