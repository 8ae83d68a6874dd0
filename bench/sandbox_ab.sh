#!/usr/bin/env bash
# The sandbox of this tree against that of a base revision (issue 24: per-child isolation against the
# sandbox before it), on one machine, interleaved round by round (the machine's load drifts; the order
# alternates between rounds). Both sides run the same bench, this tree's `spade bench sandbox`
# (apps/cmd_bench_sandbox.cpp, linked without LibTorch by bench/sandbox_ab_main.cpp), against each side's
# envsandbox and common libraries and with each side's spade-envd; only the sandbox differs. The base is
# exported with `git archive` into AB_DIR and its three targets built there (spade-envd,
# spade_envsandbox, spade_common; a few minutes on 2 cores, kept for the next run). Prints one JSON
# object (bench/sandbox_ab_summary.py): the figures of every round per side, their medians, and this
# tree's figures as ratios to the base's with a bootstrap interval; `sandbox_ab_summary.py pool A.json
# B.json` pools the rounds of several runs.
#
#   bash bench/sandbox_ab.sh [ROUNDS] [BASE_REV] > bench/sandbox_ab.json
#   ROUNDS default 4; BASE_REV default 3e39113 (main just before issue 24's merge, edf4569^1)
#   environment: BUILD (this tree's CMake build dir, default build; configured here if it is not),
#   AB_DIR (default build-ab), BENCH_ARGS (default: --episodes 60 --baseline-episodes 10 --steps 1000
#   --live 400), CXX (default g++)
set -euo pipefail
ROUNDS=${1:-4}
BASE=${2:-3e39113}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-$ROOT/build}
AB_DIR=${AB_DIR:-$ROOT/build-ab}
BENCH_ARGS=${BENCH_ARGS:---episodes 60 --baseline-episodes 10 --steps 1000 --live 400}
CXX=${CXX:-g++}
base_commit=$(git -C "$ROOT" rev-parse --verify --quiet "$BASE^{commit}") ||
  { echo "bench/sandbox_ab.sh: no commit $BASE in $ROOT (a shallow clone? git fetch --unshallow)" >&2; exit 2; }
mkdir -p "$AB_DIR"
log="$AB_DIR/build.log"
: > "$log"
logged() { "$@" >> "$log" 2>&1 || { tail -20 "$log" >&2; exit 1; }; }  # a build step; its output in $log

# The base tree: exported once per commit, configured like this tree's build, its sandbox targets built.
if [ "$(cat "$AB_DIR/base-src/.commit" 2>/dev/null)" != "$base_commit" ]; then
  rm -rf "$AB_DIR/base-src" "$AB_DIR/base-build"
  mkdir -p "$AB_DIR/base-src"
  git -C "$ROOT" archive "$base_commit" | tar -x -C "$AB_DIR/base-src"
  echo "$base_commit" > "$AB_DIR/base-src/.commit"
fi
targets=(--target spade-envd spade_envsandbox spade_common)
echo "[ab] building the base's sandbox ($base_commit) in $AB_DIR/base-build" >&2
logged cmake -S "$AB_DIR/base-src" -B "$AB_DIR/base-build" -DCMAKE_BUILD_TYPE=RelWithDebInfo
logged cmake --build "$AB_DIR/base-build" -j2 "${targets[@]}"
echo "[ab] building this tree's sandbox in $BUILD" >&2
[ -f "$BUILD/CMakeCache.txt" ] || logged cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo
BUILD=$(cd "$BUILD" && pwd)
logged cmake --build "$BUILD" -j2 "${targets[@]}"

# One bench per side: this tree's apps/ with that side's common/ and envsandbox/ headers and libraries.
link_bench() {  # side source-dir build-dir
  local inc="$AB_DIR/include-$1"
  rm -rf "$inc" && mkdir -p "$inc"
  ln -s "$ROOT/apps" "$inc/apps"
  ln -s "$2/common" "$inc/common"
  ln -s "$2/envsandbox" "$inc/envsandbox"
  echo "[ab] linking the bench against the $1 sandbox" >&2
  logged "$CXX" -std=c++20 -O2 -g -DNDEBUG -I"$inc" -DSPADE_SOURCE_DIR="\"$ROOT\"" \
    "$ROOT/bench/sandbox_ab_main.cpp" "$ROOT/apps/commands.cpp" "$ROOT/apps/cmd_bench_sandbox.cpp" \
    "$ROOT/apps/error_text.cpp" "$ROOT/apps/machine_info.cpp" \
    "$3/envsandbox/libspade_envsandbox.a" "$3/common/libspade_common.a" -lpthread -o "$AB_DIR/bench-$1"
}
link_bench base "$AB_DIR/base-src" "$AB_DIR/base-build"
link_bench head "$ROOT" "$BUILD"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for ((r = 0; r < ROUNDS; ++r)); do
  order="base head"
  ((r % 2 == 0)) || order="head base"  # alternating, so that a bias of running first or second cancels
  for side in $order; do
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
python3 "$ROOT/bench/sandbox_ab_summary.py" collect "$tmp" "$ROUNDS" "$base_commit" "$head_commit" "$BENCH_ARGS"
