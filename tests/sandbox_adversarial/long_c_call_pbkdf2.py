# Anchor 3: one multi-second C call that never returns to the interpreter (pbkdf2 with 10^9 rounds).
import hashlib


class HashEnv:
    def reset(self, seed=None):
        hashlib.pbkdf2_hmac("sha256", b"password", b"salt", 10**9)
        return "done", {}

    def step(self, action):
        return "x", 0.0, False, False, {}
