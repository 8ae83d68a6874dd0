#!/usr/bin/env bash
# The sandbox of this tree against that of a base revision (issue 24: per-child isolation against the
# sandbox before it), on one machine, interleaved round by round (the machine's load drifts). Both sides
# run the same bench, this tree's `spade bench sandbox` (apps/cmd_bench_sandbox.cpp, linked without
# LibTorch by bench/sandbox_ab_main.cpp), against each side's envsandbox and common libraries and with
# each side's spade-envd; only the sandbox differs. The base is exported with `git archive` into AB_DIR
# and its three targets built there (spade-envd, spade_envsandbox, spade_common; a few minutes on 2
# cores, kept for the next run). Prints one JSON object: the figures of every round per side, their
# medians, and this tree's medians as ratios to the base's.
#
#   bash bench/sandbox_ab.sh [ROUNDS] [BASE_REV] > bench/sandbox_ab.json
#   ROUNDS default 4; BASE_REV default 3e39113 (main just before issue 24's merge, edf4569^1)
#   environment: BUILD (this tree's CMake build dir, default build), AB_DIR (default build-ab),
#   BENCH_ARGS (default: --episodes 60 --baseline-episodes 10 --steps 1000 --live 400), CXX (default g++)
set -euo pipefail
ROUNDS=${1:-4}
BASE=${2:-3e39113}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$(cd "${BUILD:-$ROOT/build}" && pwd)
AB_DIR=${AB_DIR:-$ROOT/build-ab}
BENCH_ARGS=${BENCH_ARGS:---episodes 60 --baseline-episodes 10 --steps 1000 --live 400}
CXX=${CXX:-g++}
base_commit=$(git -C "$ROOT" rev-parse --verify "$BASE^{commit}")
mkdir -p "$AB_DIR"
log="$AB_DIR/build.log"
: > "$log"

# The base tree: exported once per commit, configured like this tree's build, its sandbox targets built.
if [ "$(cat "$AB_DIR/base-src/.commit" 2>/dev/null)" != "$base_commit" ]; then
  rm -rf "$AB_DIR/base-src" "$AB_DIR/base-build"
  mkdir -p "$AB_DIR/base-src"
  git -C "$ROOT" archive "$base_commit" | tar -x -C "$AB_DIR/base-src"
  echo "$base_commit" > "$AB_DIR/base-src/.commit"
fi
targets=(--target spade-envd spade_envsandbox spade_common)
echo "[ab] building the base's sandbox ($base_commit) in $AB_DIR/base-build" >&2
cmake -S "$AB_DIR/base-src" -B "$AB_DIR/base-build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >> "$log" 2>&1 ||
  { tail -20 "$log" >&2; exit 1; }
cmake --build "$AB_DIR/base-build" -j2 "${targets[@]}" >> "$log" 2>&1 || { tail -20 "$log" >&2; exit 1; }
echo "[ab] building this tree's sandbox in $BUILD" >&2
cmake --build "$BUILD" -j2 "${targets[@]}" >> "$log" 2>&1 || { tail -20 "$log" >&2; exit 1; }

# One bench per side: this tree's apps/ with that side's common/ and envsandbox/ headers and libraries.
link_bench() {  # side source-dir build-dir
  local inc="$AB_DIR/include-$1"
  rm -rf "$inc" && mkdir -p "$inc"
  ln -s "$ROOT/apps" "$inc/apps"
  ln -s "$2/common" "$inc/common"
  ln -s "$2/envsandbox" "$inc/envsandbox"
  echo "[ab] linking the bench against the $1 sandbox" >&2
  "$CXX" -std=c++20 -O2 -g -DNDEBUG -I"$inc" -DSPADE_SOURCE_DIR="\"$ROOT\"" \
    "$ROOT/bench/sandbox_ab_main.cpp" "$ROOT/apps/commands.cpp" "$ROOT/apps/cmd_bench_sandbox.cpp" \
    "$ROOT/apps/error_text.cpp" "$ROOT/apps/machine_info.cpp" \
    "$3/envsandbox/libspade_envsandbox.a" "$3/common/libspade_common.a" -lpthread -o "$AB_DIR/bench-$1" >> "$log" 2>&1 ||
    { tail -20 "$log" >&2; exit 1; }
}
link_bench base "$AB_DIR/base-src" "$AB_DIR/base-build"
link_bench head "$ROOT" "$BUILD"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for ((r = 0; r < ROUNDS; ++r)); do
  for side in base head; do
    build_dir=$BUILD
    [ "$side" = base ] && build_dir=$AB_DIR/base-build
    echo "[ab] round $r: $side (load average $(cut -d' ' -f1 /proc/loadavg))" >&2
    # shellcheck disable=SC2086  # BENCH_ARGS is a list of options
    (cd "$ROOT" && SPADE_ENVD="$build_dir/bin/spade-envd" OMP_WAIT_POLICY=PASSIVE \
      "$AB_DIR/bench-$side" bench sandbox $BENCH_ARGS > "$tmp/$side.$r.json" 2> "$tmp/err.txt") ||
      { cat "$tmp/err.txt" >&2; exit 1; }
  done
done
head_commit=$(git -C "$ROOT" rev-parse HEAD)
git -C "$ROOT" diff --quiet HEAD -- envsandbox common apps || head_commit="$head_commit (with uncommitted changes)"
python3 - "$tmp" "$ROUNDS" "$base_commit" "$head_commit" "$BENCH_ARGS" <<'PYEOF'
import datetime, json, statistics, sys
tmp, rounds, base, head, args = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
# (figure, path in the bench's JSON, higher is better)
figures = [
    ("startup_ms_p50_continuous_demand", "results.1_busy.sandbox.startup_ms_p50", False),
    ("startup_ms_p50_ready_spare", "sandbox_paced_1_busy.startup_ms_p50", False),
    ("startup_ms_p50_without_spares", "sandbox_without_spares_1_busy.startup_ms_p50", False),
    ("episode_steps_per_s", "results.1_busy.sandbox.episode_steps_per_s", True),
    ("episode_ratio_vs_python3_per_env", "ratios.1_busy.episode_steps_vs_subprocess", True),
    ("live_trivial_steps_per_s", "results.1_busy.sandbox.trivial_steps_per_s", True),
    ("live_seed_steps_per_s", "results.1_busy.sandbox.seed_steps_per_s", True),
    ("startup_ms_p50_2_busy", "results.2_busy.sandbox.startup_ms_p50", False),
    ("episode_steps_per_s_2_busy", "results.2_busy.sandbox.episode_steps_per_s", True),
    ("live_pool_cgroup_mib", "live.pool_cgroup_bytes", False),
    ("python3_fork_exit_wait_ms", "python3_fork_exit_wait_ms", False),
]
def get(j, path):
    for key in path.split("."):
        j = j[key]
    return j
out = {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%MZ"),
       "base": base, "head": head, "rounds": rounds, "bench_args": args, "sides": {}, "head_over_base": {}}
runs = {side: [json.load(open(f"{tmp}/{side}.{r}.json")) for r in range(rounds)] for side in ("base", "head")}
out["machine"] = runs["head"][0].get("machine")
out["live_environments"] = runs["head"][0]["live"]["environments"]
for side, js in runs.items():
    per = {}
    for name, path, _ in figures:
        xs = [get(j, path) for j in js]
        if name == "live_pool_cgroup_mib":
            xs = [x / 2**20 for x in xs]
        per[name] = {"median": round(statistics.median(xs), 3), "rounds": [round(x, 3) for x in xs]}
    out["sides"][side] = per
for name, _, _ in figures:
    out["head_over_base"][name] = round(out["sides"]["head"][name]["median"] / out["sides"]["base"][name]["median"], 3)
print(json.dumps(out, indent=1))
PYEOF
