# Anchor 11: the observation is an object whose __iter__/__len__/__str__ never end.
import time


class Endless:
    def __iter__(self):
        while True:
            yield "x"

    def __len__(self):
        while True:
            pass

    def __str__(self):
        time.sleep(3600)
        return ""


class IterEnv:
    def reset(self, seed=None):
        return "go", {}

    def step(self, action):
        return Endless(), 0.0, False, False, {}
