# Each step takes 50 ms (contract gate step_latency with a 10 ms budget: step_too_slow).
import time


class SlowEnv:
    def reset(self, seed=None):
        return "Wait for it.", {}

    def step(self, action):
        time.sleep(0.05)
        return "Still waiting.", 0.0, False, False, {}
