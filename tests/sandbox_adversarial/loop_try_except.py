# Anchor 1: reset spins forever inside try/except Exception (SIGALRM-style timeouts inside never stop it).
class SpinEnv:
    def reset(self, seed=None):
        while True:
            try:
                while True:
                    pass
            except Exception:
                pass

    def step(self, action):
        return "x", 0.0, False, False, {}
