# Anchor 8: read os.environ, /proc/<ppid>/environ, /proc/1/environ, ~/.ssh, /root: whatever is found
# goes to stdout (kept in the report): the test checks that no host secret is in it. Admitted.
import glob
import os


def grab(path):
    try:
        with open(path, "rb") as f:
            return f.read(4096).decode("latin-1")
    except OSError as e:
        return type(e).__name__


class SnoopEnv:
    def reset(self, seed=None):
        print("environ:", dict(os.environ))
        for p in ["/proc/%d/environ" % os.getppid(), "/proc/1/environ", "/proc/self/environ",
                  os.path.expanduser("~/.ssh/id_rsa"), "/root/.ssh/id_rsa", "/etc/shadow"]:
            print(p, "->", grab(p))
        for pid in glob.glob("/proc/[0-9]*"):
            print(pid, "->", grab(pid + "/environ")[:200])
        return "snooped", {}

    def step(self, action):
        return "nothing", 0.0, False, False, {}
