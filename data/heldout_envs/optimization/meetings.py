import itertools
import random
import re

def parse(action):
    m = re.findall(r"\\boxed\{([^{}]*)\}", str(action))
    return m[-1].strip() if m else str(action).strip()

class MeetingsEnv:
    def __init__(self, max_turns=5, **kwargs):
        self.max_turns = max_turns
        self.reset()

    def reset(self, seed=None):
        self.rng = random.Random(0 if seed is None else seed)
        self.turn = 0
        self.names = "ABCDEFG"[:self.rng.randint(6, 7)]
        self.slots = {}
        for m in self.names:
            s = self.rng.randint(8, 16)
            self.slots[m] = (s, s + self.rng.randint(1, 4))
        self.most = max(len(c) for k in range(1, len(self.names) + 1)
                        for c in itertools.combinations(self.names, k) if self.clash(c) is None)
        text = ", ".join(f"{m} {s}-{e}" for m, (s, e) in self.slots.items())
        return (f"Meetings (start-end hour): {text}. You can attend one meeting at a time; one may start when another ends. "
                f"Attend as many as possible. Answer the letters, e.g. ACF."), {}

    def clash(self, chosen):
        spans = sorted(self.slots[m] + (m,) for m in chosen)
        for x, y in zip(spans, spans[1:]):
            if y[0] < x[1]:
                return x[2], y[2]
        return None

    def step(self, action):
        self.turn += 1
        t = self.turn >= self.max_turns
        chosen = sorted(set(re.sub(r"[^" + self.names + "]", "", parse(action).upper())))
        if not chosen:
            return f"Invalid: answer meeting letters {self.names[0]}-{self.names[-1]}, e.g. ACF.", 0.0, False, t, {}
        bad = self.clash(chosen)
        if bad:
            return f"{bad[0]} and {bad[1]} overlap.", 0.0, False, t, {"turn": self.turn}
        if len(chosen) == self.most:
            return f"Correct! {self.most} meetings is the most.", 1.0, True, False, {"turn": self.turn}
        return f"{len(chosen)} meetings fit. More are possible.", 0.0, False, t, {"turn": self.turn}

    def solution(self):
        out, end = "", 0
        for m in sorted(self.names, key=lambda m: (self.slots[m][1], self.slots[m][0])):
            if self.slots[m][0] >= end:
                out, end = out + m, self.slots[m][1]
        return [out]
