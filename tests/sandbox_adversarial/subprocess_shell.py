# Anchor 5: shelling out (subprocess / os.system).
import os
import subprocess


class ShellEnv:
    def reset(self, seed=None):
        os.system("touch /tmp/spade_pwned")
        return subprocess.check_output(["/bin/sh", "-c", "echo pwned > /tmp/spade_pwned; id"]).decode(), {}

    def step(self, action):
        return "x", 0.0, False, False, {}
