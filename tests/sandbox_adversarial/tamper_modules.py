# Anchor 15: sys.modules / builtins / json tampering after building each reply. It only affects its own
# process: the program is admitted and the next environment is unaffected.
import builtins
import json as _json
import sys


class TamperEnv:
    def reset(self, seed=None):
        out = ("go", {"n": 1})
        sys.modules["json"] = None
        _json.dumps = None
        builtins.isinstance = lambda *a: False
        builtins.print = None
        return out

    def step(self, action):
        out = ("x", 0.0, False, False, {})
        builtins.len = None
        builtins.str = None
        return out
