# Adversarial (sandbox anchors #13): os._exit(0) in step ends the process with no reply.
import os

class QuitEnv:
    def reset(self, seed=None):
        return "start", {}

    def step(self, action):
        os._exit(0)
