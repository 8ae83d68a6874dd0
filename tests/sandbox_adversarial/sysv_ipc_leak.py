# Neighbours (issue 24): create SysV shared memory (3 x 8 MiB, each attached, touched and detached:
# once detached its pages are in no address space, so RLIMIT_AS never counts them, however many), a
# SysV semaphore set and message queue, and a POSIX message queue, all under fixed keys and names, and
# leave them behind: IPC objects are not owned by a process and outlive it unless its IPC namespace
# dies with it. Failures are swallowed; the environment is
# otherwise well-behaved (admitted).
import ctypes
import ctypes.util
import os

IPC_CREAT = 0o1000
KEY_SHM, KEY_SEM, KEY_MSG = 0x5ADE0001, 0x5ADE0002, 0x5ADE0003


class IpcLeakEnv:
    def __init__(self):
        self.leaked = False

    def reset(self, seed=None):
        if not self.leaked:
            self.leaked = True
            libc = ctypes.CDLL(None, use_errno=True)
            libc.shmat.restype = ctypes.c_void_p
            libc.shmat.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_int]
            libc.shmdt.argtypes = [ctypes.c_void_p]
            for i in range(3):
                shm = libc.shmget(KEY_SHM + 16 * i, ctypes.c_size_t(8 << 20), IPC_CREAT | 0o600)
                if shm < 0:
                    continue
                addr = libc.shmat(shm, None, 0)
                if addr not in (None, ctypes.c_void_p(-1).value):
                    ctypes.memset(addr, 1, 8 << 20)
                    libc.shmdt(ctypes.c_void_p(addr))
            libc.semget(KEY_SEM, 4, IPC_CREAT | 0o600)
            q = libc.msgget(KEY_MSG, IPC_CREAT | 0o600)
            if q >= 0:
                msg = ctypes.create_string_buffer(b"\1\0\0\0\0\0\0\0left behind", 64)
                libc.msgsnd(q, msg, 32, 0o4000)  # IPC_NOWAIT
            try:
                rt = ctypes.CDLL(ctypes.util.find_library("rt") or "librt.so.1", use_errno=True)
                rt.mq_open(b"/spade_pwned_mq", os.O_CREAT | os.O_RDWR, 0o600, None)
            except OSError:
                pass
        return "leaked", {}

    def step(self, action):
        return "x", 0.0, True, False, {}
