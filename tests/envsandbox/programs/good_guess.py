# A well-formed game (reference §2 contract): guess a number in 1..50 within max_turns.
class GuessNumberEnv:
    def __init__(self, max_turns=30):
        self.max_turns = max_turns
        self.target = None
        self.turns = 0

    def reset(self, seed=None):
        rng = random.Random(seed)
        self.target = rng.randint(1, 50)
        self.turns = 0
        return "Guess a number between 1 and 50. Answer with \\boxed{n}.", {"max_turns": self.max_turns}

    def step(self, action):
        self.turns += 1
        m = re.search(r"\\boxed\{(.*?)\}", action)
        text = m.group(1) if m else action
        try:
            guess = int(text.strip())
        except ValueError:
            return "Please answer with a number.", 0.0, False, self.turns >= self.max_turns, {}
        if guess == self.target:
            return "Correct!", 1.0, True, False, {}
        hint = "higher" if guess < self.target else "lower"
        return f"Try {hint}.", 0.0, False, self.turns >= self.max_turns, {"guess": guess}

    def solution(self):
        lo, hi, actions = 1, 50, []
        while lo <= hi:
            mid = (lo + hi) // 2
            actions.append(f"\\boxed{{{mid}}}")
            if mid == self.target:
                break
            lo, hi = (mid + 1, hi) if mid < self.target else (lo, mid - 1)
        return actions
