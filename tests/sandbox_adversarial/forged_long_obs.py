# Host caps (issue 24): answer the protocol itself on the channel (fd 3) with a well-formed reply whose
# observation is 600,000 characters long and carries no "cut" flag. The host must enforce
# max_obs_chars on what it decodes (the observation arrives cut, with cut() set: obs_too_large), never
# trust the child's own truncation. The real reply then answers the next call.
import os
import struct


def forge(payload):
    data = payload.encode()
    os.write(3, struct.pack("<I", len(data)) + data)


class LongObsEnv:
    def reset(self, seed=None):
        obs = "A" * 600000
        forge('{"value":{"t":"tuple","v":["%s",{"t":"dict","k":[],"v":[]}]}}' % obs)
        return "real", {}

    def step(self, action):
        return "x", 0.0, True, False, {}
