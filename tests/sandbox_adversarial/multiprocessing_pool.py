# Anchor 5: multiprocessing pool of 64 workers.
import multiprocessing


class PoolEnv:
    def reset(self, seed=None):
        with multiprocessing.Pool(64) as pool:
            return str(sum(pool.map(abs, range(1000)))), {}

    def step(self, action):
        return "x", 0.0, False, False, {}
