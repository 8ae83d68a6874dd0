# sandbox anchors #11: hostile objects in the returned value. Converting must not call any of them.
class Evil:
    def __repr__(self):
        while True:
            pass
    __str__ = __repr__

class EvilList(list):
    def __iter__(self):
        while True:
            yield 1

class HostileEnv:
    def reset(self, seed=None):
        loop = [1]
        loop.append(loop)
        return "start", {"evil": Evil(), "loop": loop, "big": 10**30, "lam": lambda: 0,
                         "items": EvilList([1, 2, 3]), "inf": float("-inf")}

    def step(self, action):
        return "obs", 0.0, False, False, {}
