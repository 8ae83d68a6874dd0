# Anchor 2: step disables SIGALRM then sleeps for an hour.
import signal
import time


class SleepyEnv:
    def reset(self, seed=None):
        return "go", {}

    def step(self, action):
        signal.signal(signal.SIGALRM, signal.SIG_IGN)
        time.sleep(3600)
