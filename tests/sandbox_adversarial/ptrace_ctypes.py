# More: ptrace(PTRACE_ATTACH) the parent through ctypes.
import ctypes
import os


class TraceEnv:
    def reset(self, seed=None):
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.ptrace(16, os.getppid(), 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "ptrace")
        return "attached", {}

    def step(self, action):
        return "x", 0.0, False, False, {}
