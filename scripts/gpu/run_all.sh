#!/usr/bin/env bash
# All GPU checks of issues 4 and 5 in one entry point: builds spade ONCE (scripts/gpu/build.sh), then
# runs the phases below in priority order, each under its own `timeout`, each writing its own files and
# one line (PASS / FAIL / SKIP, elapsed seconds, the numbers) to $OUT/summary.txt; a failing phase does
# not stop the later ones.
#
#   scripts/gpu/run_all.sh [--dry-run] [--phases a,b,...] [--budget S] [--fresh]
#
# Phases, highest priority first:
#   trainer      issue 5: a GRPO step through a one-rank NCCL process group (`spade bench step --group
#                nccl`, 2 layers), then one GRPO step of a Qwen3-4B-shaped random model (policy/model_shapes.h),
#                bf16 autocast, fp32 master weights, activation checkpointing, 8 x 4096 tokens (micro-batches
#                of 8192), after one warm-up step, 2 timed: tokens/s, MFU (= tokens/s * F / 989e12, F = 6 N +
#                12 L H Q T per token: PaLM appendix B, trainer/step_bench.h; target >= 0.35), peak GPU memory
#                (caching allocator max allocated / reserved, and nvidia-smi sampled every 0.2 s).
#   sampler64    issue 4: `spade bench sampler` at batch 64 (prompt 512, 256 new tokens, bf16) for the
#                qwen3-0.6b and qwen3-4b shapes: our sampler vs transformers' model.generate
#                (bench/sampler_hf.py) and vs the plain PyTorch loop (bench/sampler_ref.py), same GPU, same
#                checkpoint; peak memory (allocator peaks of both sides, nvidia-smi every 0.5 s).
#                Ours twice per batch: --decode-graph auto (decode steps replayed as CUDA graphs,
#                policy/decode_graph.h; the default) and off (eager LibTorch ops): the A/B of the graphs.
#                A graph that failed to capture or to reproduce the eager step shows as "graph FELL BACK".
#                Target: ours (auto) >= 3x transformers.generate at batch 64.
#   trainer_nockpt  issue 5: the same 4B step without activation checkpointing, micro-batches of 4096
#                tokens (what fits then): no recomputed forward, the second chance at the MFU target.
#   parity       issue 4: tiny random llama / qwen2 / qwen3 / qwen3_moe models saved by transformers (and
#                qwen3 saved in bf16), scored by `spade score` and by transformers
#                (scripts/gpu/parity_transformers.py; tolerance 1e-3, bf16 compute 5% of the largest logit).
#   sampler16_1  as sampler64 at batches 16 and 1 ("if time allows").
#   sharding     issue 23: one GRPO step ($GROUP_SHAPE) with distributed.sharding none, optimizer (ZeRO-1),
#                gradients (ZeRO-2) and full (ZeRO-3, with activation checkpointing, which leaves the gradient
#                unchanged) through the real backend: a one-rank group (in-process store) and, where
#                several GPUs exist (dry run: 2 CPU ranks over Gloo), N local ranks (`bench step --nproc`).
#                Every mode's gradient norm must equal none's at the same world size (same weights, same
#                batches) to 1e-3 relative, and the optimizer state per rank be 1/N of none's (within padding).
#   turns        issue 4: `spade bench turns` on the qwen3-0.6b shape, 256 sequences x 4 turns, batch 64:
#                episode turns continuously batched (rollout/episode.cpp) vs in lockstep, tokens/s and
#                sampling rounds of both (about a minute).
#   unittests    builds test_policy and test_rollout against the CUDA LibTorch and runs their ctest
#                (policy.DecodeGraph.CudaGraphReplaysEqualEagerForwardOnTheGpu runs only there).
# Without transformers on the machine, the transformers parts report SKIP with the reason (the plain-loop
# baseline still runs) and no ratio is made up.
#
# Resumable: the build is incremental, and a phase that PASSed leaves a marker under
# $BUILD/run_all_state/, so running the same command again (while the machine is warm: build outputs
# stay there between calls) skips it and continues with the rest. --fresh clears the markers.
# --budget S (default 570 on the GPU): the command plans to end within S seconds: the build gets what is
# left less 30 s; a phase starts only if at least its minimum is left and its timeout is capped by what
# is left, so the call returns cleanly before the device tool's 600 s limit and the next call resumes.
#
# Output ($OUT, default ./gpu_out; the device tool brings back at most 8 files): summary.txt (one line per
# phase of this call), run_all.log (everything printed), details.tgz (every phase's files, refreshed after
# each phase; earlier calls' phases included: they live in $BUILD/run_all_work/).
#
# THE GPU SESSION'S CALLS (after `bash scripts/gpu/fetch_debs.sh` here, which fills gpu_debs/, ~51 MB):
#   1. run(command="bash scripts/gpu/run_all.sh", carry=["gpu_debs"], timeout_s=600)
#   2. if summary.txt has a SKIP for lack of time or "FAIL build ... out of time", AT ONCE (the machine
#      is given back after 30 s idle, and with it the build; no status() call in between), with
#      B = lease.budget_left_s from call 1's reply:
#      run(command="bash scripts/gpu/run_all.sh --budget <B - 40>", carry=["gpu_debs"], timeout_s=<B - 20>)
#      (the 15 minutes include the machine's start and every idle second); then give_back().
# Each reply's output_tail ends with summary.txt; details.tgz holds each phase's JSON and logs. Record
# the numbers in bench/RESULTS.md. Times on the H200: MEASURED on 2026-12-04 where marked, else the
# estimates written before any GPU run, with their reasoning:
#   machine start      MEASURED ~35 s, outside the command but inside the 15 min of device time.
#   build              MEASURED 69 s for `spade` (134 steps, 16 cores, torch 2.11: no old-ABI rebuild).
#   trainer            MEASURED 63 s (NCCL group step, then the 4B step: 3.7 s per step).
#   sampler64          MEASURED 267 s (both models, graphs auto and off, both baselines).
#   trainer_nockpt     MEASURED 40 s.
#   parity             MEASURED 15-18 s.
#   sampler16_1 ~3-5 min (timeout 330): as sampler64, two batch sizes (estimate).
#   turns              MEASURED 89 s.
#   sharding   ~25-50 s (timeout 120): 4 (one GPU) or 8 single steps of the 2-layer shape (estimate).
#   unittests  ~3-6 min (timeout 560): ~40 more translation units, then the tests (estimate).
# One 570 s call got through every phase but sampler16_1 and unittests; a second call with the time
# left runs those (the PASS markers skip the rest while the machine is warm).
#
# --dry-run: the same phases on a CPU build here ($BUILD, default ./build-gpu-dry; point BUILD at your
# own CPU build dir to reuse it: an existing build dir is built as configured), with tiny shapes (model
# tiny, batches 4 and 2,1, prompt 16, 8 new tokens), Gloo instead of NCCL, no nvidia-smi,
# /usr/bin/python3 (Debian's torch, no transformers: the transformers parts SKIP), a small ctest
# selection, no real time budget (--budget 7200, phase timeouts x6), plus two dry-only phases:
#   cuda_syntax  `c++ -fsyntax-only` of the CUDA-only branches (trainer/distributed.cpp with
#                -DUSE_C10D_NCCL, trainer/device_memory.cpp with -DSPADE_CUDA_ALLOCATOR_STATS,
#                policy/decode_graph.cpp with -DSPADE_CUDA_GRAPHS) with the
#                compile command of the CPU build (compile_commands.json) plus -isystem
#                /usr/local/cuda/include and a generated c10/cuda/impl/cuda_cmake_macros.h (Debian's
#                LibTorch omits it), and py_compile of the Python the phases run (a quick check only:
#                scripts/check_torch2.sh --cuda compiles and links the whole CUDA build, in a Debian 13
#                root with libtorch-cuda-dev 2.6);
#   debs         unpacks gpu_debs/ with use_debs.sh and runs CMake's configure with those packages.
# Environment: OUT, BUILD, PYTHON (the interpreter with torch; GPU default python3), UNIT_TARGETS and
# UNIT_REGEX (the unittests phase; default test_policy test_rollout, '^(policy|rollout)\.' on the GPU).
#
# STATUS: run on an H200 on 2026-12-04 (bench/RESULTS.md "GPU checks": every phase but sampler16_1 and
# unittests); the summary line of each phase says what failed, details.tgz has the logs.
set -uo pipefail

DRY=0 FRESH=0 PHASES="" BUDGET=""
while [[ $# -gt 0 ]]; do
  case $1 in
    --dry-run) DRY=1 ;;
    --fresh) FRESH=1 ;;
    --phases) PHASES=$2; shift ;;
    --budget) BUDGET=$2; shift ;;
    *) echo "run_all.sh: unknown argument '$1' (--dry-run, --phases a,b, --budget S, --fresh)"; exit 2 ;;
  esac
  shift
done

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT" || exit 1
OUT=${OUT:-$ROOT/gpu_out}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
: > "$OUT/summary.txt"
: > "$OUT/run_all.log"
exec > >(tee -a "$OUT/run_all.log") 2>&1
T0=$SECONDS

if [[ $DRY == 1 ]]; then
  MODE=cpu
  BUILD=${BUILD:-$ROOT/build-gpu-dry}
  BUDGET=${BUDGET:-7200}
  MAX_SCALE=6                                    # phase timeouts x6: 2 shared cores build the unit tests
  PY=${PYTHON:-/usr/bin/python3}                  # Debian's python3 with Debian's torch
  DEV=cpu GROUP=gloo DTYPE=float32 SMI=0
  MODELS=tiny PROMPT=16 NEW=8 BATCHES_FIRST=4 BATCHES_REST=2,1 GRAPH_MODES=auto,on
  GROUP_SHAPE="--shape qwen3-4b --layers 2 --hidden 64 --heads 4 --kv-heads 2 --head-dim 16 --intermediate 128 --vocab 512 --batch 2 --seq 64"
  STEP_SHAPE="--shape qwen3-4b --layers 2 --hidden 64 --heads 4 --kv-heads 2 --head-dim 16 --intermediate 128 --vocab 512 --batch 8 --seq 128 --threads 2 --steps 2"
  MB_TOKENS=256 NOCKPT_MB_TOKENS=128
  UNIT_REGEX=${UNIT_REGEX:-'^(policy\.(RmsNorm|Rope)|rollout\.Boxed)\.'}
  UNIT_TARGETS=${UNIT_TARGETS:-test_policy test_rollout}
  TURNS_ARGS="--model tiny --sequences 8 --max-batch 4 --turns 2 --prompt 16 --observation 4 --max-new 16"
  ALL_PHASES=cuda_syntax,debs,trainer,sampler64,trainer_nockpt,parity,sharding,sampler16_1,turns,unittests
else
  MODE=gpu
  BUILD=${BUILD:-$ROOT/build-gpu}
  BUDGET=${BUDGET:-570}
  MAX_SCALE=1
  PY=${PYTHON:-python3}                           # the image's python3 holds PyTorch (KINDS.md)
  DEV=cuda GROUP=nccl DTYPE=bfloat16 SMI=1
  MODELS=qwen3-0.6b,qwen3-4b PROMPT=512 NEW=256 BATCHES_FIRST=64 BATCHES_REST=16,1 GRAPH_MODES=auto,off
  GROUP_SHAPE="--shape qwen3-4b --layers 2 --batch 2 --seq 512"
  STEP_SHAPE="--shape qwen3-4b --batch 8 --seq 4096 --steps 2"
  MB_TOKENS=8192 NOCKPT_MB_TOKENS=4096
  UNIT_REGEX=${UNIT_REGEX:-'^(policy|rollout)\.'}
  UNIT_TARGETS=${UNIT_TARGETS:-test_policy test_rollout}
  TURNS_ARGS="--model qwen3-0.6b --sequences 256 --max-batch 64"
  ALL_PHASES=trainer,sampler64,trainer_nockpt,parity,sharding,sampler16_1,turns,unittests
fi
PY=$(command -v "$PY") || { echo "run_all.sh: no python at ${PYTHON:-python3}"; exit 1; }
PHASES=${PHASES:-$ALL_PHASES}
BUILD=$(realpath -m "$BUILD")   # absolute: paths derived from it end up in CMake's include directories
STATE=$BUILD/run_all_state      # PASS markers (survive between calls while the machine is warm)
WORK=$BUILD/run_all_work        # every phase's files
CKPT=${TMPDIR:-/tmp}/spade_run_all_ckpt   # the bench's random checkpoints (deleted after each phase)
mkdir -p "$BUILD" "$STATE" "$WORK"
[[ $FRESH == 1 ]] && rm -f "$STATE"/*.pass
SPADE=$BUILD/bin/spade
export ROOT BUILD PY DEV GROUP DTYPE SMI MODELS GRAPH_MODES PROMPT NEW GROUP_SHAPE STEP_SHAPE MB_TOKENS NOCKPT_MB_TOKENS UNIT_REGEX UNIT_TARGETS TURNS_ARGS SPADE CKPT DRY

left() { echo $((BUDGET - (SECONDS - T0))); }
summary() { echo "$*" | tee -a "$OUT/summary.txt"; }
pack() {  # details.tgz: every phase's files so far (small logs and JSON; checkpoints live in $CKPT)
  tar -czf "$OUT/details.tgz.tmp" -C "$BUILD" run_all_work run_all_state 2>/dev/null && mv "$OUT/details.tgz.tmp" "$OUT/details.tgz"
}

# ---- phases: each runs in its own bash under `timeout`, in its directory $1, writes a one-line result
# to $1/result.txt and returns 0 (PASS), 3 (SKIP) or anything else (FAIL).

# Background nvidia-smi sampler of used memory (MiB) into $1 every $2 s; prints its pid (nothing on the CPU).
smi_start() {
  [[ $SMI == 1 ]] || return 0
  (while sleep "$2"; do nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -i 0; done) > "$1" 2>&1 &
  echo $!
}
smi_peak() {  # the largest sample, or null (no samples, or nvidia-smi printed only errors)
  local p
  p=$(grep -E '^[0-9]+$' "$1" 2> /dev/null | sort -n | tail -1)
  echo "${p:-null}"
}

phase_cuda_syntax() {  # dry-run only: the CUDA-only branches compile against Debian's headers
  local dir=$1 inc rc=0
  inc=$dir/include
  mkdir -p "$inc/c10/cuda/impl"
  # Generated by PyTorch's CMake (c10/cuda/impl/cuda_cmake_macros.h.in); Debian's libtorch-dev omits it.
  echo '#define C10_CUDA_BUILD_SHARED_LIBS' > "$inc/c10/cuda/impl/cuda_cmake_macros.h"
  local f def
  for f in trainer/distributed.cpp:-DUSE_C10D_NCCL trainer/device_memory.cpp:-DSPADE_CUDA_ALLOCATOR_STATS \
           policy/decode_graph.cpp:-DSPADE_CUDA_GRAPHS; do
    def=${f#*:} f=${f%%:*}
    local cmd
    cmd=$("$PY" - "$BUILD/compile_commands.json" "$ROOT/$f" <<'PYEOF'
import json, shlex, sys
entry = next(e for e in json.load(open(sys.argv[1])) if e["file"] == sys.argv[2])
args = entry.get("arguments") or shlex.split(entry["command"])
out, skip = [], False
for a in args:  # drop -o OUT and -c FILE: -fsyntax-only below
    if skip:
        skip = False
    elif a in ("-o", "-c"):
        skip = True
    else:
        out.append(a)
print(shlex.join(out))
PYEOF
) || { echo "FAIL cuda_syntax: no compile command for $f in $BUILD/compile_commands.json" > "$dir/result.txt"; return 1; }
    echo "+ $cmd $def -isystem /usr/local/cuda/include -isystem $inc -fsyntax-only $ROOT/$f" >> "$dir/syntax.log"
    if eval "$cmd" "$def" -isystem /usr/local/cuda/include -isystem "$inc" -fsyntax-only "$ROOT/$f" >> "$dir/syntax.log" 2>&1; then
      echo "ok: $f $def" | tee -a "$dir/syntax.log"
    else
      echo "FAILED: $f $def" | tee -a "$dir/syntax.log"; rc=1
    fi
  done
  "$PY" -m py_compile bench/sampler_hf.py bench/sampler_ref.py scripts/gpu/parity_transformers.py >> "$dir/syntax.log" 2>&1 \
    || { echo "FAILED: py_compile" | tee -a "$dir/syntax.log"; rc=1; }
  if [[ $rc == 0 ]]; then
    echo "distributed.cpp (-DUSE_C10D_NCCL), device_memory.cpp (-DSPADE_CUDA_ALLOCATOR_STATS), decode_graph.cpp (-DSPADE_CUDA_GRAPHS) and the Python compile" > "$dir/result.txt"
  else
    echo "$(grep -c FAILED "$dir/syntax.log") failures, see cuda_syntax/syntax.log" > "$dir/result.txt"
  fi
  return $rc
}

phase_debs() {  # dry-run only: the carried gpu_debs/ unpack (use_debs.sh) and CMake configures with them
  local dir=$1 prefix n
  [[ -d $ROOT/gpu_debs ]] || { echo "no gpu_debs/ here (bash scripts/gpu/fetch_debs.sh)" > "$dir/result.txt"; return 3; }
  prefix=$("$PY" -c 'import torch.utils; print(torch.utils.cmake_prefix_path)')
  # shellcheck source=scripts/gpu/use_debs.sh
  source "$ROOT/scripts/gpu/use_debs.sh"
  SPADE_DEPS=$dir/deps use_debs "$ROOT/gpu_debs" "$prefix" "$PY" > "$dir/use_debs.log" 2>&1 \
    || { tail -5 "$dir/use_debs.log"; echo "use_debs failed: $(tail -1 "$dir/use_debs.log")" > "$dir/result.txt"; return 1; }
  cmake -S "$ROOT" -B "$dir/cfg" -DCMAKE_BUILD_TYPE=Release "${SPADE_CMAKE_ARGS[@]}" > "$dir/cmake.log" 2>&1 \
    || { tail -20 "$dir/cmake.log"; echo "cmake with the carried packages failed, see debs/cmake.log" > "$dir/result.txt"; rm -rf "$dir/deps" "$dir/cfg"; return 1; }
  n=$(grep -c "$dir/deps" "$dir/cfg/CMakeCache.txt")
  echo "$(tail -1 "$dir/use_debs.log"); cmake configured with them ($n cache entries point into the unpacked tree)" > "$dir/result.txt"
  rm -rf "$dir/deps" "$dir/cfg"
}

# One timed GRPO step ($STEP_SHAPE, bf16 autocast, then the overrides "$@") into $1/trainer_step.json;
# prints its summary line.
grpo_step() {
  local dir=$1 rc=0 pid
  shift
  echo "== GRPO step ($STEP_SHAPE $*), autocast bf16"
  pid=$(smi_start "$dir/gpu_memory.log" 0.2)
  # shellcheck disable=SC2086
  "$SPADE" bench step $STEP_SHAPE --device "$DEV" --autocast bf16 --warmup 1 "$@" \
    > "$dir/trainer_step.json" 2> "$dir/trainer_step.err" || rc=$?
  [[ -n $pid ]] && kill "$pid" 2> /dev/null
  [[ $rc == 0 ]] || { tail -20 "$dir/trainer_step.err"; echo "GRPO step failed (rc $rc): $(tail -1 "$dir/trainer_step.err")"; return 1; }
  "$PY" - "$dir/trainer_step.json" "$(smi_peak "$dir/gpu_memory.log")" <<'PYEOF'
import json, sys
r = json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])
smi = sys.argv[2]
gib = lambda mb: "n/a" if mb is None or mb < 0 else f"{mb / 1024:.1f} GiB"
print(f"{r['params'] / 1e9:.2f}B params on {r['device']}, {r['batch']}x{r['seq']} tokens, {r['micro_batches']} "
      f"micro-batches of <= {r['micro_batch_tokens']} tokens, checkpointing {r['activation_checkpointing']}, attention "
      f"{r['attention']}: step {min(r['step_s']):.2f}-{max(r['step_s']):.2f} s, {r['tokens_per_s']:.0f} tokens/s, "
      f"MFU {100 * r['mfu']:.1f}% (target 35%: {'met' if r['mfu'] >= 0.35 else 'NOT met'}), "
      f"GPU max allocated {gib(r['peak_gpu_allocated_mb'])} / reserved {gib(r['peak_gpu_reserved_mb'])}, "
      f"nvidia-smi peak {gib(None if smi == 'null' else float(smi))}, host VmHWM {r['peak_rss_mb'] / 1024:.1f} GiB")
PYEOF
}

phase_trainer() {
  local dir=$1 line
  echo "== one-rank $GROUP group"
  # shellcheck disable=SC2086
  "$SPADE" bench step $GROUP_SHAPE --device "$DEV" --group "$GROUP" --warmup 0 --steps 1 > "$dir/group_step.json" 2> "$dir/group_step.err" \
    || { tail -20 "$dir/group_step.err"; echo "step with a $GROUP group failed: $(tail -1 "$dir/group_step.err")" > "$dir/result.txt"; return 1; }
  line=$("$PY" - "$dir/group_step.json" "$GROUP" <<'PYEOF'
import json, sys
g = json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])
assert g["group"] == sys.argv[2], f"group {g['group']} != {sys.argv[2]}"
print(f"{g['group']} group ok (step {g['step_s'][0]:.2f} s)")
PYEOF
) || { echo "the $GROUP group step reported the wrong group" > "$dir/result.txt"; return 1; }
  echo "$line; $(grpo_step "$dir" --activation-checkpointing true --micro-batch-tokens "$MB_TOKENS" | tail -1)" > "$dir/result.txt"
  grep -q "GRPO step failed" "$dir/result.txt" && return 1
  return 0
}

# The same step without activation checkpointing (no recomputed forward: ~25% fewer FLOPs per step) in
# micro-batches of half the tokens, which is what fits then: ~10 MB of saved activations per token
# (36 layers) x 4096 tokens + 64 GB of fp32 weights, gradients and AdamW moments. The second chance
# at the MFU target if the checkpointed step misses it; an out-of-memory here is a result too.
phase_trainer_nockpt() {
  local dir=$1
  grpo_step "$dir" --activation-checkpointing false --micro-batch-tokens "$NOCKPT_MB_TOKENS" > "$dir/out.txt"
  local rc=$?
  tail -1 "$dir/out.txt" > "$dir/result.txt"
  return $rc
}

# One `spade bench sampler` run at batches $2 with both baselines; rows stream to rows.jsonl.
sampler_run() {
  local dir=$1 batches=$2 rc=0 pid
  pid=$(smi_start "$dir/gpu_memory.log" 0.5)
  "$SPADE" bench sampler --models "$MODELS" --batches "$batches" --prompt "$PROMPT" --new "$NEW" --device "$DEV" \
    --dtype "$DTYPE" --decode-graph "$GRAPH_MODES" --baseline hf,loop --python "$PY" --work-dir "$CKPT" \
    > "$dir/bench.json" 2> "$dir/bench.err" || rc=$?
  [[ -n $pid ]] && kill "$pid" 2> /dev/null
  rm -rf "$CKPT"
  grep '^{' "$dir/bench.err" > "$dir/rows.jsonl"
  [[ $rc == 0 || $rc == 1 ]] || { tail -20 "$dir/bench.err"; echo "bench sampler failed (rc $rc): $(grep -v '^{' "$dir/bench.err" | tail -1)" > "$dir/result.txt"; return 1; }
  # rc 1: a baseline or one of our decode-graph modes failed; the rows say which, the other numbers kept.
  local fell_back
  fell_back=$(grep -m1 'CUDA graph decode off' "$dir/bench.err")
  "$PY" - "$dir/rows.jsonl" "$(smi_peak "$dir/gpu_memory.log")" "$rc" "$fell_back" > "$dir/result.txt" <<'PYEOF'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
smi, bench_rc, fell_back = sys.argv[2], int(sys.argv[3]), sys.argv[4]
assert rows, "no rows"
parts, ok = [], bench_rc == 0
mb = lambda v: "n/a" if v is None else f"{v / 1024:.1f} GiB"
for r in rows:
    graph = r.get("decode_graph", "auto")
    if "error" in r:
        parts.append(f"{r['model']} b{r['batch']} decode_graph {graph}: ours FAIL ({r['error'].strip().splitlines()[-1][:300]})")
        continue
    s = f"{r['model']} b{r['batch']} decode_graph {graph}: ours {r['tokens_per_s']:.0f} tok/s (GPU max alloc {mb(r['peak_gpu_allocated_mb'])})"
    for name, b in r["baselines"].items():
        if "skipped" in b:
            s += f"; {name} SKIP ({b['skipped']})"
        elif "error" in b:
            s += f"; {name} FAIL ({b['error'].strip().splitlines()[-1][:200]})"
        else:
            s += f"; {name} {b['tokens_per_s']:.0f} tok/s, ours/{name} {b['ratio']:.2f}x"
            if b.get("peak_gpu_allocated_mb") is not None:
                s += f" ({name} max alloc {mb(b['peak_gpu_allocated_mb'])})"
            if name == "hf" and r["batch"] == 64 and graph == "auto":
                s += " [target 3x " + ("met]" if b["ratio"] >= 3 else "NOT met]")
    parts.append(s)
print(" | ".join(parts) + ("" if smi == "null" else f" | nvidia-smi peak {float(smi) / 1024:.1f} GiB")
      + (f" | graph FELL BACK: {fell_back[:300]}" if fell_back else ""))
sys.exit(0 if ok else 1)
PYEOF
}
phase_sampler64() { sampler_run "$1" "$BATCHES_FIRST"; }
phase_sampler16_1() { sampler_run "$1" "$BATCHES_REST"; }

# `spade bench turns`: the multi-turn schedules side by side (one JSON object on stdout).
phase_turns() {
  local dir=$1 rc=0
  # shellcheck disable=SC2086  # TURNS_ARGS is a list of options
  "$SPADE" bench turns $TURNS_ARGS --device "$DEV" --dtype "$DTYPE" > "$dir/turns.json" 2> "$dir/turns.err" || rc=$?
  if [[ $rc != 0 ]]; then
    echo "bench turns failed (rc $rc): $(tail -1 "$dir/turns.err")" > "$dir/result.txt"
    return 1
  fi
  "$PY" - "$dir/turns.json" > "$dir/result.txt" <<'PYEOF'
import json, sys
d = json.load(open(sys.argv[1]))
l, c = d["lockstep"], d["continuous"]
print(f"{d['model']} {d['sequences']} seqs x {d['turns']} turns, max_batch {d['max_batch']}: lockstep "
      f"{l['tokens_per_s']:.0f} tok/s ({l['rounds']} rounds), continuous {c['tokens_per_s']:.0f} tok/s "
      f"({c['rounds']} rounds), speedup {d['speedup']:.2f}x, same histories {d['same_histories']}/{d['sequences']}")
PYEOF
}

phase_sharding() {
  local dir=$1 n mode world
  n=$([[ $DRY == 1 ]] && echo 2 || nvidia-smi -L 2> /dev/null | grep -c '^GPU')
  for mode in none optimizer gradients full; do
    for world in 1 "$n"; do
      (( world == 1 )) || (( n > 1 )) || continue
      local nproc=() f=$dir/w${world}_$mode ckpt=()
      (( world > 1 )) && nproc=(--nproc "$world")
      [[ $mode == full ]] && ckpt=(--activation-checkpointing true)
      # shellcheck disable=SC2086  # GROUP_SHAPE is a list of options
      "$SPADE" bench step $GROUP_SHAPE --device "$DEV" --group "$GROUP" --sharding "$mode" --warmup 0 --steps 1 \
        "${nproc[@]}" "${ckpt[@]}" > "$f.json" 2> "$f.err" \
        || { tail -20 "$f.err"; echo "sharding $mode at world size $world failed: $(tail -1 "$f.err")" > "$dir/result.txt"; return 1; }
    done
  done
  "$PY" - "$dir" "$n" > "$dir/result.txt" <<'PYEOF'
import json, sys
d, n = sys.argv[1], int(sys.argv[2])
parts, ok = [], True
for w in sorted({1, n}):
    if w > 1 and n < 2:
        continue
    rows = {m: json.loads(open(f"{d}/w{w}_{m}.json").read().strip().splitlines()[-1]) for m in ("none", "optimizer", "gradients", "full")}
    base = rows["none"]
    for m, r in rows.items():
        rel = abs(r["grad_norm"] - base["grad_norm"]) / max(abs(base["grad_norm"]), 1e-12)
        share = r["optimizer_state_bytes"] / base["optimizer_state_bytes"]
        good = r["world_size"] == w and rel <= 1e-3 and (m == "none" or share <= 1.0 / w + 0.01)
        ok &= good
        parts.append(f"w{w} {m}: step {r['step_s'][0]:.2f} s, grad norm {r['grad_norm']:.5g} (rel {rel:.1e}), "
                     f"optimizer state {r['optimizer_state_bytes'] / 2**20:.2f} MiB ({share:.3f} of none)" + ("" if good else " BAD"))
print(f"{rows['none']['group']}: " + "; ".join(parts) + ("" if n > 1 else "; one GPU: world size N not run"))
sys.exit(0 if ok else 1)
PYEOF
}

phase_parity() {
  local dir=$1 rc=0
  "$PY" scripts/gpu/parity_transformers.py "$SPADE" > "$dir/parity.json" 2> "$dir/parity.err" || rc=$?
  "$PY" - "$dir/parity.json" "$rc" > "$dir/result.txt" <<'PYEOF'
import json, sys
text = open(sys.argv[1]).read().strip()
if not text:
    print(f"parity_transformers.py printed nothing (rc {sys.argv[2]}), see parity.err"); sys.exit(1)
r = json.loads(text.splitlines()[-1])
if "skipped" in r:
    print(r["skipped"]); sys.exit(3)
parts = []
for x in r["results"]:
    parts.append(f"{x['family']} " + (f"ERROR {x['error'][:200]}" if "error" in x else
                 f"logprob {x['max_abs_logprob_diff']:.2e} top20 logit {x['max_abs_top20_logit_diff']:.2e}"))
print(f"transformers {r['transformers']}, tolerance {r['tolerance']}: " + "; ".join(parts))
sys.exit(0 if r["ok"] else 1)
PYEOF
}

phase_unittests() {
  local dir=$1 limit=$2 rc=0 t=$SECONDS
  # shellcheck source=scripts/gpu/build.sh
  source "$ROOT/scripts/gpu/build.sh"
  SPADE_BUILD_MODE=$([[ $DRY == 1 ]] && echo cpu || echo gpu)
  # shellcheck disable=SC2086
  spade_build "$BUILD" "$dir" $((limit - 60)) $UNIT_TARGETS \
    || { echo "building $UNIT_TARGETS failed or ran out of time (rc $?), see unittests/build.log" > "$dir/result.txt"; return 1; }
  (cd "$BUILD" && OMP_WAIT_POLICY=PASSIVE timeout $((limit - (SECONDS - t) - 5)) \
     ctest -R "$UNIT_REGEX" --output-on-failure -j4) > "$dir/ctest.log" 2>&1 || rc=$?
  tail -5 "$dir/ctest.log"
  echo "ctest -R '$UNIT_REGEX' (rc $rc): $(grep -E 'tests passed|tests failed' "$dir/ctest.log" | tail -1)" > "$dir/result.txt"
  return $rc
}
export -f smi_start smi_peak phase_cuda_syntax phase_debs grpo_step phase_trainer phase_trainer_nockpt sampler_run phase_sampler64 phase_sampler16_1 \
  phase_turns phase_sharding phase_parity phase_unittests
export BATCHES_FIRST BATCHES_REST

# run_phase NAME MIN_S MAX_S: skips a phase PASSed by an earlier call, or one there is no time left for.
run_phase() {
  local name=$1 min=$2 max=$3
  [[ ",$PHASES," == *",$name,"* ]] || return 0
  if [[ -f $STATE/$name.pass ]]; then
    summary "PASS $name (earlier call): $(cat "$STATE/$name.pass")"; return 0
  fi
  local budget_left limit
  budget_left=$(left)
  if (( budget_left < min )); then
    summary "SKIP $name: ${budget_left} s left of the ${BUDGET} s budget, needs >= ${min} s; run the same command again to continue"
    return 0
  fi
  max=$((max * MAX_SCALE))
  limit=$(( budget_left - 10 < max ? budget_left - 10 : max ))
  local dir=$WORK/$name rc=0 t=$SECONDS
  rm -rf "$dir" && mkdir -p "$dir"
  echo "== phase $name (timeout ${limit} s) $(date -u +%H:%M:%S)"
  # shellcheck disable=SC2016  # expanded by the inner bash
  timeout -k 10 "$limit" bash -c 'cd "$ROOT" && "phase_$1" "$2" "$3"' _ "$name" "$dir" "$limit" || rc=$?
  local took=$((SECONDS - t)) detail
  detail=$(head -c 3000 "$dir/result.txt" 2> /dev/null | tr '\n' ' ')
  case $rc in
    0) summary "PASS $name ${took}s: $detail"; echo "${took}s: $detail" > "$STATE/$name.pass" ;;
    3) summary "SKIP $name ${took}s: $detail" ;;
    124|137) summary "FAIL $name ${took}s: timed out after ${limit} s. ${detail}" ;;
    *) summary "FAIL $name ${took}s (rc $rc): ${detail:-no result, see run_all.log}" ;;
  esac
  pack
}

echo "== run_all.sh $([[ $DRY == 1 ]] && echo --dry-run) $(date -u): build $BUILD, budget $BUDGET s, phases $PHASES, python $PY"
mkdir -p "$WORK/machine"
if [[ $SMI == 1 ]]; then nvidia-smi > "$WORK/machine/nvidia-smi.txt" 2>&1; head -15 "$WORK/machine/nvidia-smi.txt"; fi
"$PY" -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, torch.cuda.is_available())' 2>&1 \
  | tee "$WORK/machine/torch.txt"
"$PY" -c 'import transformers; print("transformers", transformers.__version__)' > "$WORK/machine/transformers.txt" 2>&1 \
  || echo "transformers not importable: the transformers parts will SKIP ($(tail -1 "$WORK/machine/transformers.txt"))"

# ---- build (once; incremental on a later call)
# shellcheck source=scripts/gpu/build.sh
source "$ROOT/scripts/gpu/build.sh"
tb=$SECONDS
if ! spade_build_env "$MODE" "$PY"; then
  summary "FAIL build: environment (torch prefix / gpu_debs), see run_all.log"; pack; exit 1
fi
brc=0
spade_build "$BUILD" "$WORK/build" $(( $(left) - 30 )) spade || brc=$?
if [[ $brc != 0 ]]; then
  if [[ $brc == 124 ]]; then
    summary "FAIL build $((SECONDS - tb))s: out of time (incomplete; the same command again continues it)"
  else
    summary "FAIL build $((SECONDS - tb))s (rc $brc): see build/build.log in details.tgz"
  fi
  pack; cat "$OUT/summary.txt"; exit 1
fi
if [[ $MODE == gpu ]] && ! cuda_check=$(spade_check_cuda_build "$BUILD"); then
  summary "FAIL build $((SECONDS - tb))s: $cuda_check"; pack; cat "$OUT/summary.txt"; exit 1
fi
summary "PASS build $((SECONDS - tb))s: $SPADE"

# ---- phases in priority order: NAME MIN_S MAX_S (GPU estimates in the header)
run_phase cuda_syntax 10 300
run_phase debs 10 300
run_phase trainer 200 330
run_phase sampler64 180 300
run_phase trainer_nockpt 100 200
run_phase parity 45 120
run_phase sharding 40 120
run_phase sampler16_1 150 330
run_phase turns 60 200
run_phase unittests 200 560
pack
echo "== done in $((SECONDS - T0)) s; $OUT/summary.txt:"
cat "$OUT/summary.txt"
! grep -q '^FAIL' "$OUT/summary.txt"
