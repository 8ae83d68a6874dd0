# Anchor 5: daemonise (double fork + setsid) to outlive the environment.
import os
import time


class DaemonEnv:
    def reset(self, seed=None):
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                time.sleep(3600)
            os._exit(0)
        return "daemon started", {}

    def step(self, action):
        return "x", 0.0, False, False, {}
