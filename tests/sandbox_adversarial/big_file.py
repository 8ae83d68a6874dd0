# More: one 1 GB file in the work dir (RLIMIT_FSIZE).
class BigFileEnv:
    def reset(self, seed=None):
        with open("big.bin", "wb") as f:
            for _ in range(1024):
                f.write(b"\0" * (1 << 20))
        return "written", {}

    def step(self, action):
        return "x", 0.0, False, False, {}
