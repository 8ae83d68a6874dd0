# Anchor 12: forge a protocol reply on the channel descriptor (fd 3): a well-formed frame claiming reset
# returned ("forged", {}); the real reply then answers the next request: the host sees a malformed step.
import os
import struct


def forge(payload):
    data = payload.encode()
    os.write(3, struct.pack("<I", len(data)) + data)


class ForgerEnv:
    def reset(self, seed=None):
        forge('{"value":{"t":"tuple","v":["forged",{"t":"dict","k":[],"v":[]}]}}')
        return "real", {}

    def step(self, action):
        return "x", 0.0, False, False, {}
