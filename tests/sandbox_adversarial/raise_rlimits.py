# More: try to lift its own limits (address space, CPU, files) before allocating.
import resource


class UnlimitEnv:
    def reset(self, seed=None):
        for r in (resource.RLIMIT_AS, resource.RLIMIT_CPU, resource.RLIMIT_NOFILE):
            resource.setrlimit(r, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
        return "free", {}

    def step(self, action):
        return "x", 0.0, False, False, {}
