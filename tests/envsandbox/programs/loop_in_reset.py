# Adversarial (sandbox anchors #1): reset spins forever inside try/except Exception.
class SpinEnv:
    def reset(self, seed=None):
        while True:
            try:
                pass
            except Exception:
                pass

    def step(self, action):
        return "", 0.0, False, False, {}
