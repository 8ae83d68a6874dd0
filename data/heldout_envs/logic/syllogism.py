import itertools
import random
import re

def parse(action):
    m = re.findall(r"\\boxed\{([^{}]*)\}", str(action))
    return m[-1].strip() if m else str(action).strip()

WORDS = ["blips", "drons", "fents", "glorks", "mibs", "pranks", "quells", "tovs", "wumps", "zeds"]
FORMS = ["all", "no", "some", "some_not"]
REGIONS = [r for r in itertools.product((0, 1), repeat=3) if any(r)]
# Models: which of the 7 Venn regions (membership in sets 0, 1, 2) are non-empty; every set is non-empty.
MODELS = [m for m in itertools.product((0, 1), repeat=7)
          if all(any(on and r[k] for on, r in zip(m, REGIONS)) for k in range(3))]

def holds(model, form, x, y):
    both = any(on and r[x] and r[y] for on, r in zip(model, REGIONS))
    only_x = any(on and r[x] and not r[y] for on, r in zip(model, REGIONS))
    return {"all": not only_x, "no": not both, "some": both, "some_not": only_x}[form]

def say(form, x, y):
    return {"all": f"All {x} are {y}.", "no": f"No {x} are {y}.", "some": f"Some {x} are {y}.",
            "some_not": f"Some {x} are not {y}."}[form]

class SyllogismEnv:
    def __init__(self, max_turns=2, **kwargs):
        self.max_turns = max_turns
        self.reset()

    def reset(self, seed=None):
        self.rng = random.Random(0 if seed is None else seed)
        self.turn = 0
        want = self.rng.choice(["true", "false", "unknown"])
        names = self.rng.sample(WORDS, 3)
        while True:
            p1 = (self.rng.choice(FORMS), *self.rng.choice([(0, 1), (1, 0)]))
            p2 = (self.rng.choice(FORMS), *self.rng.choice([(1, 2), (2, 1)]))
            c = (self.rng.choice(FORMS), *self.rng.choice([(0, 2), (2, 0)]))
            ok = [m for m in MODELS if holds(m, *p1) and holds(m, *p2)]
            if not ok:
                continue
            vals = {holds(m, *c) for m in ok}
            self.ans = "unknown" if len(vals) == 2 else "true" if True in vals else "false"
            if self.ans == want:
                break
        text = lambda s: say(s[0], names[s[1]], names[s[2]])
        return (f"{text(p1)} {text(p2)} Each kind exists. Is the statement '{text(c)[:-1]}' necessarily true, "
                f"necessarily false, or unknown? Only one try: answer true, false or unknown."), {}

    def step(self, action):
        self.turn += 1
        a = parse(action).lower().strip(" .")
        if a not in ("true", "false", "unknown"):
            return "Invalid: answer true, false or unknown.", 0.0, False, self.turn >= self.max_turns, {}
        if a == self.ans:
            return "Correct!", 1.0, True, False, {"turn": self.turn}
        return "Wrong.", 0.0, True, False, {"turn": self.turn}

    def solution(self):
        return [self.ans]
