#!/usr/bin/env python3
"""Reads a spade rollouts.h5 with h5py (test oracle for trainer/rollout_log.cpp).

Checks the layout (format attribute, N + 1 offsets starting at 0, non-decreasing, ending at the
values' length; equal tokens/loss_mask/rollout_logprobs lengths; environment source hashes equal
FNV-1a 64 of the stored source) and prints every row as JSON:
{"format", "total_episodes", "episodes": [...], "environments": [...]} (a NaN win_rate or regret as
null). Checks too that every /environments column has the same number of rows and that `closed` is
non-decreasing (rows are written in step order). Exits 1 on a violation.
Usage: read_rollouts_h5.py ROLLOUTS_H5
"""
import json
import math
import sys

import h5py


def fnv1a64(data: bytes) -> int:
    h = 14695981039346656037  # the standard 64-bit FNV-1a offset basis
    for b in data:
        h = ((h ^ b) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    return h


def ragged(group, name, offsets_name, n):
    off = group[offsets_name][()]
    values = group[name][()]
    if len(off) != n + 1 or off[0] != 0 or any(off[i] > off[i + 1] for i in range(n)) or off[-1] != len(values):
        raise ValueError(f"{group.name}/{offsets_name} is inconsistent with {name} ({len(off)} offsets, {n} rows)")
    return [values[off[i]:off[i + 1]] for i in range(n)]


def text(group, name, n):
    return [bytes(x).decode("utf-8") for x in ragged(group, name, name + "_offsets", n)]


def number(x):
    """A float64 cell as JSON: NaN (no play, no hint) becomes null."""
    x = float(x)
    return None if math.isnan(x) else x


def main(path):
    f = h5py.File(path, "r")
    fmt = f.attrs["format"]
    fmt = fmt.decode() if isinstance(fmt, bytes) else str(fmt)
    if fmt != "spade-rollouts-4":
        raise ValueError(f"format attribute is {fmt!r}")
    ep = f["episodes"]
    n = len(ep["id"])
    for name in ("step", "rollout_id", "role", "hinted", "trained", "rewards", "advantages", "terminations",
                 "truncations", "total_steps", "env_source_hash"):
        if len(ep[name]) != n:
            raise ValueError(f"/episodes/{name} has {len(ep[name])} rows, /episodes/id {n}")
    tokens = ragged(ep, "tokens", "tokens_offsets", n)
    mask = ragged(ep, "loss_mask", "tokens_offsets", n)
    logp = ragged(ep, "rollout_logprobs", "tokens_offsets", n)
    kinds = ragged(ep, "token_kinds", "tokens_offsets", n)
    env_id, skill = text(ep, "env_id", n), text(ep, "skill", n)
    if list(ep["id"][()]) != list(range(n)):
        raise ValueError("/episodes/id is not 0..N-1")
    roles = f.attrs["role_names"]
    roles = (roles.decode() if isinstance(roles, bytes) else str(roles)).split(",")
    episodes = []
    for i in range(n):
        episodes.append({
            "id": int(ep["id"][i]), "step": int(ep["step"][i]), "rollout_id": int(ep["rollout_id"][i]),
            "role": roles[int(ep["role"][i])], "hinted": int(ep["hinted"][i]), "trained": int(ep["trained"][i]),
            "reward": float(ep["rewards"][i]), "advantage": float(ep["advantages"][i]),
            "terminated": int(ep["terminations"][i]), "truncated": int(ep["truncations"][i]),
            "turns": int(ep["total_steps"][i]), "env_source_hash": str(int(ep["env_source_hash"][i])),
            "env_id": env_id[i], "skill": skill[i], "tokens": [int(x) for x in tokens[i]],
            "loss_mask": [int(x) for x in mask[i]], "rollout_logprobs": [float(x) for x in logp[i]],
            "token_kinds": [int(x) for x in kinds[i]]})
    env = f["environments"]
    m = len(env["born"])
    for name in ("closed", "from_seed", "source_hash", "window_plays", "win_rate", "regret"):
        if len(env[name]) != m:
            raise ValueError(f"/environments/{name} has {len(env[name])} rows, /environments/born {m}")
    closed = [int(x) for x in env["closed"][()]]
    if any(closed[i] > closed[i + 1] for i in range(m - 1)):
        raise ValueError("/environments/closed is not in step order")
    ids, skills, sources, hints = (text(env, k, m) for k in ("id", "skill", "source", "hint"))
    environments = []
    for i in range(m):
        h = int(env["source_hash"][i])
        if h != fnv1a64(sources[i].encode("utf-8")):
            raise ValueError(f"/environments/source_hash[{i}] differs from FNV-1a of the stored source")
        environments.append({"id": ids[i], "skill": skills[i], "born": int(env["born"][i]), "closed": closed[i],
                             "from_seed": int(env["from_seed"][i]), "source_hash": str(h),
                             "window_plays": int(env["window_plays"][i]), "win_rate": number(env["win_rate"][i]),
                             "regret": number(env["regret"][i]), "source": sources[i], "hint": hints[i]})
    print(json.dumps({"format": fmt, "total_episodes": int(f.attrs["total_episodes"]),
                      "episodes": episodes, "environments": environments}))


if __name__ == "__main__":
    try:
        main(sys.argv[1])
    except (ValueError, KeyError, OSError) as e:
        print(f"bad rollouts file {sys.argv[1]}: {e}", file=sys.stderr)
        sys.exit(1)
