# More: signal the parent (the zygote), pid 1 and everyone (-1).
import os
import signal


class KillerEnv:
    def reset(self, seed=None):
        for pid in (os.getppid(), 1, -1):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        os.kill(os.getppid(), signal.SIGKILL)
        return "still here", {}

    def step(self, action):
        return "x", 0.0, False, False, {}
