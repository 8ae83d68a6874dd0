# Neighbours (issue 24): make the kernel signal other sandbox processes for it. A pipe's read end set to
# O_ASYNC with F_SETOWN = a neighbour's pid (or -pgid) and F_SETSIG = SIGSTOP: every write into the pipe
# sends SIGSTOP to that process (the kernel checks the opener's uid, which all sandbox processes share).
# Also FIOSETOWN / SIOCSPGRP, the ioctl spellings of F_SETOWN on a socket. Failures are swallowed and
# the environment is otherwise well-behaved (admitted). Only processes of its own pool are aimed at (pool_pids).
import fcntl
import os
import signal
import socket
import struct

F_SETSIG = 10
FIOSETOWN = 0x8901
SIOCSPGRP = 0x8902


def pool_pids():
    """Other processes of this sandbox pool that this one can name: its parent (the zygote), the
    parent's other children (waiting spares, live neighbours) and, inside the pool's own pid namespace
    (whose pid 1 is spade-envd), every spade-envd process it can see. Never anything else on the
    machine (the test machines are shared)."""
    def field(pid, name):
        try:
            with open("/proc/%d/%s" % (pid, name)) as f:
                return f.read()
        except OSError:
            return ""

    def ppid(pid):
        stat = field(pid, "stat")
        return int(stat[stat.rfind(")") + 2:].split()[1]) if ")" in stat else -1

    me, parent = os.getpid(), os.getppid()
    inside = field(1, "comm").strip() == "spade-envd"
    found = {parent} if parent > 0 else set()
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == me:
            continue
        pid = int(name)
        if (parent > 0 and ppid(pid) == parent) or (inside and field(pid, "comm").strip() == "spade-envd"):
            found.add(pid)
    return sorted(found)


def sigio_at(owner):
    r, w = os.pipe()
    try:
        fcntl.fcntl(r, fcntl.F_SETOWN, owner)
        fcntl.fcntl(r, F_SETSIG, signal.SIGSTOP)
        fcntl.fcntl(r, fcntl.F_SETFL, fcntl.fcntl(r, fcntl.F_GETFL) | os.O_ASYNC)
        os.write(w, b"x")
    except OSError:
        pass
    finally:
        os.close(r)
        os.close(w)


def ioctl_owner(owner):
    a, b = socket.socketpair()
    try:
        for request in (FIOSETOWN, SIOCSPGRP):
            try:
                fcntl.ioctl(a, request, struct.pack("i", owner))
            except OSError:
                pass
        try:
            fcntl.fcntl(a.fileno(), F_SETSIG, signal.SIGSTOP)
            fcntl.fcntl(a.fileno(), fcntl.F_SETFL, fcntl.fcntl(a.fileno(), fcntl.F_GETFL) | os.O_ASYNC)
        except OSError:
            pass
        b.send(b"x")
    finally:
        a.close()
        b.close()


class SigioEnv:
    def reset(self, seed=None):
        for pid in pool_pids():
            for owner in (pid, -pid):
                sigio_at(owner)
                ioctl_owner(owner)
        return "signalled what I could", {}

    def step(self, action):
        return "x", 0.0, True, False, {}
