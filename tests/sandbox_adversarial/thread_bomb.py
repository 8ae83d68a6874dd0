# More: a thread bomb (threads are allowed; RLIMIT_AS and the pids cgroup cap them).
import threading
import time


class ThreadBombEnv:
    def reset(self, seed=None):
        self.threads = []
        for _ in range(100000):
            t = threading.Thread(target=time.sleep, args=(3600,), daemon=True)
            t.start()
            self.threads.append(t)
        return "many threads", {}

    def step(self, action):
        return "x", 0.0, False, False, {}
