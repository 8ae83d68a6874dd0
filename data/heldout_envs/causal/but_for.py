import random
import re

def parse(action):
    m = re.findall(r"\\boxed\{([^{}]*)\}", str(action))
    return m[-1].strip() if m else str(action).strip()

SHAPES = {"(x or y) and z": lambda x, y, z: (x or y) and z,
          "x or (y and z)": lambda x, y, z: x or (y and z),
          "x and y and z": lambda x, y, z: x and y and z,
          "x or y or z": lambda x, y, z: x or y or z,
          "(x or y) and not z": lambda x, y, z: (x or y) and not z,
          "x and (y or not z)": lambda x, y, z: x and (y or not z)}
EFFECTS = ["the alarm rings", "the lamp lights", "the pump starts", "the door opens"]

class ButForEnv:
    def __init__(self, max_turns=3, **kwargs):
        self.max_turns = max_turns
        self.reset()

    def reset(self, seed=None):
        self.rng = random.Random(0 if seed is None else seed)
        self.turn = 0
        self.effect = self.rng.choice(EFFECTS)
        while True:
            self.shape = self.rng.choice(sorted(SHAPES))
            self.names = self.rng.sample("ABC", 3)
            self.v = [self.rng.randint(0, 1) for _ in range(3)]
            if self.fires(self.v):
                break
        self.rule = self.shape
        for var, n in zip("xyz", self.names):
            self.rule = self.rule.replace(var, n)
        causes = []
        for i in range(3):
            w = list(self.v)
            w[i] ^= 1
            if not self.fires(w):
                causes.append("ABC"[i])
        self.ans = "".join(causes) or "NONE"
        facts = ", ".join(f"{n} {'happened' if x else 'did not happen'}" for n, x in zip("ABC", self.v))
        return (f"Rule: {self.effect} exactly when {self.rule}. Today {facts}, so {self.effect}. Which events are "
                f"but-for causes (changing that one event alone would have prevented it)? Answer letters, e.g. AC, or none."), {}

    def fires(self, v):
        vals = dict(zip("ABC", v))
        return bool(SHAPES[self.shape](*(vals[n] for n in self.names)))

    def step(self, action):
        self.turn += 1
        t = self.turn >= self.max_turns
        words = [w for w in re.findall(r"[A-Z]+", parse(action).upper()) if w != "AND"]
        if words in (["NONE"], ["NO"], ["NOTHING"]):
            a = "NONE"
        else:
            a = "".join(sorted(set("".join(words)))) if all(set(w) <= set("ABC") for w in words) else ""
        if not a:
            return "Invalid: answer letters from A, B, C (e.g. AC) or none.", 0.0, False, t, {}
        if a == self.ans:
            return "Correct!", 1.0, True, False, {"turn": self.turn}
        return "Wrong set. Flip one event at a time and re-check the rule.", 0.0, False, t, {"turn": self.turn}

    def solution(self):
        return [self.ans.lower() if self.ans == "NONE" else self.ans]
