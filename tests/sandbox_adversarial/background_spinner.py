# More: a background thread that keeps burning CPU (and holding the GIL) after every call returns.
import threading


def burn():
    x = 0
    while True:
        x += 1


class SpinnerEnv:
    def reset(self, seed=None):
        threading.Thread(target=burn, daemon=True).start()
        return "go", {}

    def step(self, action):
        return "x", 0.0, False, False, {}
