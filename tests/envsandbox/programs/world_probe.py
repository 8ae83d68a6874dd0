# The follow-up program of the neighbour tests (tests/envsandbox/test_neighbours.cpp, issue 24): a
# well-behaved game whose reset(seed=0) reports the world it finds -- its limits, scheduling, what it can
# write, what it can see (files, processes, IPC objects), how much memory it can still take -- so that a
# test can compare the world after hostile programs ran in the same pool with the world in a fresh pool.
# Other seeds return a small info (the validation gates play it like any game).
import ctypes
import ctypes.util
import os
import re
import resource

PLACES = ["/", "/etc", "/var", "/usr", "/dev", "/dev/shm", "/tmp", "/proc", ".", "..", "../.."]
LISTED = ["/", "/dev", "/dev/shm", "/tmp", "."]
IPC_INFO_CMDS = {"shm": 14, "sem": 19, "msg": 12}  # SHM_INFO, SEM_INFO, MSG_INFO


def normalise(text):
    # Random names of today's shared work dirs (spade-envd-XXXXXX/env-XXXXXX) would differ between any
    # two pools; what matters is what is there.
    return re.sub(r"\b(spade-envd|env)-[A-Za-z0-9]{6}\b", r"\1-*", text)


def attempt(fn):
    try:
        return fn()
    except BaseException as e:  # noqa: BLE001 - the type is the answer
        return type(e).__name__


def can_write(place):
    path = os.path.join(place, "world_probe_%d" % os.getpid())
    try:
        with open(path, "w") as f:
            f.write("x")
        os.unlink(path)
        return True
    except OSError:
        return False


def ipc_counts(libc):
    out = {}
    buf = ctypes.create_string_buffer(256)
    out["shm"] = [libc.shmctl(0, IPC_INFO_CMDS["shm"], buf), ctypes.c_int.from_buffer(buf).value]  # used_ids
    out["msg"] = [libc.msgctl(0, IPC_INFO_CMDS["msg"], buf), ctypes.c_int.from_buffer(buf, 4 * 0).value]
    out["sem"] = [libc.semctl(0, 0, IPC_INFO_CMDS["sem"], buf), ctypes.c_int.from_buffer(buf, 4 * 7).value]
    try:
        rt = ctypes.CDLL(ctypes.util.find_library("rt") or "librt.so.1", use_errno=True)
        q = rt.mq_open(b"/spade_pwned_mq", os.O_RDONLY)
        out["mq_left"] = q >= 0
        if q >= 0:
            rt.mq_close(q)
    except OSError:
        out["mq_left"] = "no librt"
    return out


def status_field(key):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return line.split(":", 1)[1].strip()
    return None


def world():
    libc = ctypes.CDLL(None, use_errno=True)
    w = {
        "uid": [os.getuid(), os.getgid()],
        "rlimits": {n: list(resource.getrlimit(getattr(resource, n))) for n in sorted(dir(resource))
                    if n.startswith("RLIMIT_")},
        "nice": os.getpriority(os.PRIO_PROCESS, 0),
        "sched": [os.sched_getscheduler(0), os.sched_getparam(0).sched_priority],
        "affinity": sorted(os.sched_getaffinity(0)),
        "ioprio": libc.syscall(252, 1, 0),  # ioprio_get(IOPRIO_WHO_PROCESS, self), x86_64
        "caps": status_field("CapEff"),
        "cwd": normalise(os.getcwd()),
        "writable": [p for p in PLACES if can_write(p)],
        "listing": {p: attempt(lambda p=p: sorted(normalise(n) for n in os.listdir(p))) for p in LISTED},
        "free": {p: attempt(lambda p=p: os.statvfs(p).f_bavail * os.statvfs(p).f_frsize) for p in ("/tmp", "/dev/shm", ".")},
        "ipc": ipc_counts(libc),
        "processes": len([n for n in os.listdir("/proc") if n.isdigit()]),
        "alloc_128mb": attempt(lambda: len(b"x" * (128 << 20)) and "ok"),
    }
    return w


class WorldProbeEnv:
    def __init__(self, max_turns=3):
        self.max_turns = max_turns
        self.turn = 0

    def reset(self, seed=None):
        self.turn = 0
        if seed == 0:
            return "world", world()
        return "Say anything; the episode ends after %d turns." % self.max_turns, {"seed": seed}

    def step(self, action):
        self.turn += 1
        done = self.turn >= self.max_turns
        return "turn %d" % self.turn, 1.0 if done else 0.0, done, False, {}

    def solution(self):
        return ["\\boxed{ok}"] * self.max_turns
