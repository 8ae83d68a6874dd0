# Neighbours (issue 24): leave files wherever it can write -- /, /etc, /var, /usr, /dev, /dev/shm, /tmp,
# /proc and the parents of its work dir -- for the next environments to find. Only its own work dir and
# its own /tmp may be writable, and nothing it writes may outlive it. Failures are swallowed; the
# environment is otherwise well-behaved (admitted).
import os

PLACES = ["/", "/etc", "/var", "/usr", "/dev", "/dev/shm", "/tmp", "/proc", "..", "../.."]


class LitterEnv:
    def reset(self, seed=None):
        left = []
        for place in PLACES:
            try:
                os.makedirs(place, exist_ok=True)
                path = os.path.join(place, "spade_pwned_litter")
                with open(path, "w") as f:
                    f.write("left by write_everywhere.py\n")
                left.append(path)
            except OSError:
                pass
        print("left: %s" % left)
        return "littered", {}

    def step(self, action):
        return "x", 0.0, True, False, {}
