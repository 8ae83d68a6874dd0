# Anchor 2: step disables SIGALRM (and SIGTERM/SIGINT) then spins.
import signal


class NoAlarmEnv:
    def reset(self, seed=None):
        return "go", {}

    def step(self, action):
        for s in (signal.SIGALRM, signal.SIGTERM, signal.SIGINT):
            signal.signal(s, signal.SIG_IGN)
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM, signal.SIGTERM})
        while True:
            pass
