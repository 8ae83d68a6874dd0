# Anchor 7: DNS resolution (exfiltration channel).
import socket


class DnsEnv:
    def reset(self, seed=None):
        return socket.gethostbyname("secret-data.example.com"), {}

    def step(self, action):
        return "x", 0.0, False, False, {}
