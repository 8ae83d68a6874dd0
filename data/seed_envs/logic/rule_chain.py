import random
import re

def parse(action):
    m = re.findall(r"\\boxed\{([^{}]*)\}", str(action))
    return m[-1].strip() if m else str(action).strip()

class RuleChainEnv:
    def __init__(self, max_turns=5, **kwargs):
        self.max_turns = max_turns
        self.reset()

    def reset(self, seed=None):
        self.rng = random.Random(0 if seed is None else seed)
        self.turn = 0
        while True:
            rules = [tuple(self.rng.sample("ABCDEF", 2)) for _ in range(4)]
            fact = self.rng.choice("ABCDEF")
            known = {fact}
            for _ in range(4):
                known |= {q for p, q in rules if p in known}
            if len(known) >= 3:
                break
        self.ans = "".join(sorted(known))
        text = ", ".join(f"{p}->{q}" for p, q in rules)
        return f"Rules: {text}. Fact: {fact} is true. Which letters must be true? Answer in order, e.g. ACE.", {}

    def step(self, action):
        self.turn += 1
        a = re.sub(r"[^A-F]", "", parse(action).upper())
        if not a:
            return "Invalid: answer letters A-F, e.g. ACE.", 0.0, False, self.turn >= self.max_turns, {}
        if sorted(set(a)) == list(self.ans):
            return "Correct!", 1.0, True, False, {"turn": self.turn}
        return "Wrong set of letters.", 0.0, False, self.turn >= self.max_turns, {"turn": self.turn}

    def solution(self):
        return [self.ans]
