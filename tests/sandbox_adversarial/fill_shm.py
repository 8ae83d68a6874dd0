# Neighbours (issue 24): fill /dev/shm (shared memory files, charged to the pool's memory cgroup and
# outside RLIMIT_AS) until writing fails, up to 4 GiB. If those files outlived the program, the pool's
# memory cap would be used up and every later environment would be OOM-killed. Each file stays under
# RLIMIT_FSIZE (16 MiB). Failures are swallowed; the environment is otherwise well-behaved (admitted).
import os

CHUNK = b"\1" * (1 << 20)


class ShmFillEnv:
    def __init__(self):
        self.filled = False

    def reset(self, seed=None):
        if not self.filled:
            self.filled = True
            written = 0
            try:
                for i in range(256):
                    with open("/dev/shm/spade_pwned_shm%d" % i, "wb") as f:
                        for _ in range(16):
                            f.write(CHUNK)
                            written += len(CHUNK)
            except (OSError, MemoryError):
                pass
            print("wrote %d MiB" % (written >> 20))
        return "filled", {}

    def step(self, action):
        return "x", 0.0, True, False, {}
