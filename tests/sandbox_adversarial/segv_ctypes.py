# Anchor 14: ctypes.string_at(0).
import ctypes


class NullEnv:
    def reset(self, seed=None):
        return ctypes.string_at(0).decode(), {}

    def step(self, action):
        return "x", 0.0, False, False, {}
