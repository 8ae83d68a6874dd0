#!/usr/bin/env bash
# The sharding overhead on the CPU (issue 23): `spade bench step` on N local Gloo ranks (default 2) with
# distributed.sharding none, optimizer (ZeRO-1), gradients (ZeRO-2), full (ZeRO-3) and full without its
# layer prefetch (--prefetch false), interleaved round
# by round (the machine's load drifts), one intra-op thread per rank, bench step's defaults otherwise
# (bf16 autocast, activation checkpointing: which full requires). Prints one JSON object: per mode the median
# step time over all rounds' timed steps, tokens/s per rank, this rank's optimizer-state bytes and peak
# RSS, and each mode's step time as a ratio to none's.
#
#   bash bench/sharding_step.sh [ROUNDS] [NPROC] > bench/sharding_bench.json
#   environment: SPADE (default build/bin/spade), SHAPE_ARGS (default: the tiny shape, 4 x 256 tokens)
set -euo pipefail
ROUNDS=${1:-5}
NPROC=${2:-2}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SPADE=${SPADE:-$ROOT/build/bin/spade}
SHAPE_ARGS=${SHAPE_ARGS:---shape tiny --batch 4 --seq 256}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for ((r = 0; r < ROUNDS; ++r)); do
  for mode in none optimizer gradients full full_no_prefetch; do
    prefetch=true
    [ "$mode" = full_no_prefetch ] && prefetch=false
    # shellcheck disable=SC2086  # SHAPE_ARGS is a list of options
    "$SPADE" bench step $SHAPE_ARGS --threads 1 --warmup 1 --steps 3 --nproc "$NPROC" --sharding "${mode%_no_prefetch}" \
      --prefetch "$prefetch" >> "$tmp/$mode.jsonl" 2> "$tmp/err.txt" || { cat "$tmp/err.txt" >&2; exit 1; }
  done
done
python3 - "$tmp" "$ROUNDS" "$NPROC" "$SHAPE_ARGS" <<'PYEOF'
import json, os, platform, statistics, subprocess, sys, datetime
tmp, rounds, nproc, shape = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
out = {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%MZ"),
       "machine": f"{platform.node()}, {os.cpu_count()} cores", "load_average": os.getloadavg(),
       "command": f"bash bench/sharding_step.sh {rounds} {nproc}", "shape_args": shape, "modes": {}}
for mode in ("none", "optimizer", "gradients", "full", "full_no_prefetch"):
    rows = [json.loads(l) for l in open(f"{tmp}/{mode}.jsonl") if l.startswith("{")]
    steps = [s for r in rows for s in r["step_s"]]
    out["modes"][mode] = {"params": rows[0]["params"], "world_size": rows[0]["world_size"],
                          "timed_steps": len(steps), "median_step_s": statistics.median(steps),
                          "tokens_per_s_per_rank": rows[0]["tokens"] / statistics.median(steps),
                          "optimizer_state_bytes": rows[0]["optimizer_state_bytes"],
                          "peak_rss_mb": max(r["peak_rss_mb"] for r in rows),
                          "prefetched_gathers": rows[0]["prefetched_gathers"]}
base = out["modes"]["none"]["median_step_s"]
for m in out["modes"].values():
    m["step_time_vs_none"] = round(m["median_step_s"] / base, 3)
print(json.dumps(out, indent=1))
PYEOF
