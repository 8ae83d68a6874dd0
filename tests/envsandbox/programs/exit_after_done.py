# Ends after one step, then kills its own process when stepped again (contract gate step_after_done: exited).
import os


class OneShotEnv:
    def reset(self, seed=None):
        self.done = False
        return "One move only.", {}

    def step(self, action):
        if self.done:
            os._exit(3)
        self.done = True
        return "Thanks.", 1.0, True, False, {}
