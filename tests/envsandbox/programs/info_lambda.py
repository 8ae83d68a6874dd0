# Puts a function in step()'s info dict (contract gate: info_not_json).
class LambdaEnv:
    def reset(self, seed=None):
        return "Go.", {"ok": 1}

    def step(self, action):
        return "Went.", 0.0, False, False, {"callback": lambda: None}
