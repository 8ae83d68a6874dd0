#!/usr/bin/env bash
# GPU check of issue 5 (trainer/), in one call, results under $OUT:
#   1. builds `spade` against the machine's PyTorch 2.x LibTorch (CUDA), as run_checks.sh does;
#   2. NCCL process group of world size 1: a small GRPO step whose collectives (normaliser sum, bucketed
#      gradient all-reduce, metric sums) run through ProcessGroupNCCL (`spade bench step --group nccl`);
#   3. one GRPO step of a Qwen3-4B-shaped random model (trainer/step_bench.h qwen3_4b_shape) on one GPU,
#      bf16 autocast with fp32 master weights, activation checkpointing, 8 x 4096 tokens (micro-batches
#      of 8192 tokens), after one warm-up step: tokens/s, MFU, peak GPU memory (nvidia-smi, sampled
#      every 0.2 s: the caching allocator's reserved memory, which is what must fit).
#      MFU = tokens/s * F / 989e12, F = 6 N + 12 L H Q T per token (PaLM appendix B; N = matmul weights
#      incl. the output projection, L layers, H heads of size Q, T = 4096), 989 TFLOPS = H200 SXM dense
#      bf16 peak (datasheet 1,979 "with sparsity"). Issue 5 target: MFU >= 0.35.
# Every step fails loudly (non-zero exit, the failing command's output tail). Record the summary in
# bench/RESULTS.md.
#
# STATUS: written without a GPU (issue 5 session not lent a device machine): never run on one.
# --dry-run checks the CPU-side parts here: the same commands on the CPU build (build-lead or
# $SPADE), with tiny shapes, Gloo instead of NCCL, and no nvidia-smi.
#
# Usage: here, `bash scripts/gpu/fetch_debs.sh` (the GPU machine reaches no package registry); then on the
# device machine (repository root, carry=["gpu_debs"]): OUT=/some/dir scripts/gpu/run_trainer_check.sh
# [--dry-run]. run_checks.sh first shares its build directory (build-gpu), so the second build is incremental.
set -euo pipefail
DRY=0
[[ "${1:-}" == "--dry-run" ]] && DRY=1
OUT=${OUT:-$PWD/gpu_out}
mkdir -p "$OUT"
exec > >(tee "$OUT/run_trainer_check.log") 2>&1
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
PY=${PYTHON:-python3}
fail() { echo "FAIL: $*"; exit 1; }

if [[ $DRY == 1 ]]; then
  SPADE=${SPADE:-$ROOT/build-lead/bin/spade}
  [[ -x $SPADE ]] || fail "--dry-run needs a CPU build of spade at $SPADE (or set SPADE=)"
  DEV=cpu; GROUP=gloo
  SMALL=(--layers 2 --hidden 64 --heads 4 --kv-heads 2 --head-dim 16 --intermediate 128 --vocab 512 --batch 2 --seq 64)
  BIG=(--layers 2 --hidden 64 --heads 4 --kv-heads 2 --head-dim 16 --intermediate 128 --vocab 512 --batch 8 --seq 128
       --micro-batch-tokens 256 --threads 2)
else
  echo "== machine"; nvidia-smi | tee "$OUT/nvidia-smi.txt"; date -u
  TORCH_PREFIX=$($PY -c 'import torch.utils; print(torch.utils.cmake_prefix_path)') || fail "no torch in $PY"
  BUILD=${BUILD:-$ROOT/build-gpu}
  echo "== 1. build spade against $TORCH_PREFIX"
  # The Debian build dependencies travel in gpu_debs/ (scripts/gpu/fetch_debs.sh; carry=["gpu_debs"]).
  SPADE_CMAKE_ARGS=(-DCMAKE_PREFIX_PATH="$TORCH_PREFIX")
  if [[ -d $ROOT/gpu_debs ]]; then
    source "$ROOT/scripts/gpu/use_debs.sh"
    use_debs "$ROOT/gpu_debs" "$TORCH_PREFIX" "$PY" || fail "gpu_debs"
  fi
  cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release "${SPADE_CMAKE_ARGS[@]}" \
    -DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc > "$OUT/cmake.log" 2>&1 || { tail -50 "$OUT/cmake.log"; fail cmake; }
  cmake --build "$BUILD" -j"$(nproc)" --target spade > "$OUT/build.log" 2>&1 || { tail -80 "$OUT/build.log"; fail build; }
  SPADE=$BUILD/bin/spade
  DEV=cuda:0; GROUP=nccl
  SMALL=(--layers 2 --batch 2 --seq 512)
  BIG=(--batch 8 --seq 4096 --micro-batch-tokens 8192 --steps 2)
fi

echo "== 2. $GROUP process group of world size 1"
"$SPADE" bench step "${SMALL[@]}" --device "$DEV" --group "$GROUP" --warmup 0 --steps 1 > "$OUT/group_step.json" \
  || { cat "$OUT/group_step.json"; fail "step with a $GROUP group"; }
$PY - "$OUT/group_step.json" "$GROUP" <<'PYEOF' || fail "group check"
import json, sys
r = json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])
assert r["group"] == sys.argv[2], f"group {r['group']} != {sys.argv[2]}"
print(f"ok: one-rank {r['group']} group, step {r['step_s'][0]:.2f} s, pg_loss {r['pg_loss']:.4g}, grad_norm {r['grad_norm']:.4g}")
PYEOF

echo "== 3. GRPO step, Qwen3-4B shape, bf16 autocast, activation checkpointing"
MEM_PID=
if [[ $DRY == 0 ]]; then
  (while sleep 0.2; do nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -i 0; done) > "$OUT/gpu_memory.log" &
  MEM_PID=$!
fi
rc=0
"$SPADE" bench step "${BIG[@]}" --device "$DEV" --autocast bf16 --activation-checkpointing true --warmup 1 \
  > "$OUT/trainer_step.json" || rc=$?
[[ -n $MEM_PID ]] && kill "$MEM_PID" 2>/dev/null
[[ $rc == 0 ]] || { cat "$OUT/trainer_step.json"; fail "GRPO step (rc $rc)"; }
PEAK=0
[[ $DRY == 0 ]] && PEAK=$(sort -n "$OUT/gpu_memory.log" | tail -1)
$PY - "$OUT/trainer_step.json" "$PEAK" <<'PYEOF' | tee "$OUT/summary.txt" || fail "summary"
import json, sys
r = json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])
peak = float(sys.argv[2])
print(f"device {r['device']}: {r['params']/1e9:.2f}B params, {r['batch']} x {r['seq']} tokens, "
      f"{r['micro_batches']} micro-batches, autocast {r['autocast']}, checkpointing {r['activation_checkpointing']}")
print(f"step {min(r['step_s']):.2f}-{max(r['step_s']):.2f} s  tokens/s {r['tokens_per_s']:.0f}  "
      f"MFU {100*r['mfu']:.1f}% (F = {r['flops_per_token']/1e9:.2f} GFLOP/token, peak {r['peak_tflops']} TFLOPS; target 35%)  "
      f"peak GPU memory {peak/1024:.1f} GiB (nvidia-smi), allocator max allocated "
      f"{r['peak_gpu_allocated_mb']/1024:.1f} GiB / reserved {r['peak_gpu_reserved_mb']/1024:.1f} GiB  "
      f"host VmHWM {r['peak_rss_mb']/1024:.1f} GiB")
print("MFU target met" if r["mfu"] >= 0.35 else "MFU BELOW the 35% target")
PYEOF
echo "done: $OUT"
