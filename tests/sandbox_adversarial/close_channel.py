# More: close the channel and keep running.
import os
import time


class MuteEnv:
    def reset(self, seed=None):
        os.close(3)
        time.sleep(3600)

    def step(self, action):
        return "x", 0.0, False, False, {}
