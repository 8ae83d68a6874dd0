#!/usr/bin/env bash
# GPU checks for policy/ and rollout/ (issue 4), in one call, results under $OUT:
#   1. builds spade against the machine's PyTorch 2.x LibTorch (CUDA) found via
#      python3 -c 'import torch.utils; print(torch.utils.cmake_prefix_path)';
#   2. runs the policy and rollout unit tests (incl. the parity test vs tests/policy/reference_forward.py);
#   3. parity vs `transformers` itself: tiny random llama / qwen2 / qwen3 checkpoints saved by
#      transformers, scored by `spade score --ids ... --json` (our forward) and by transformers
#      (fp32 logits), max abs diff of the last position's top-20 logits and of all logprobs;
#   4. the sampler bench on the GPU: our sampler vs bench/sampler_ref.py, bf16, batch 1/16/64,
#      prompt 512 / new 256, with nvidia-smi memory samples.
#
# STATUS: written without a GPU. The session that wrote it (issue 4) was not lent a device machine,
# so this script has NEVER been run; expect to fix small things on its first run. Not covered yet:
# Qwen3-0.6B/4B-shaped models and the transformers.generate baseline at batch 64 (issue 4 targets).
#
# The trainer's GPU check (issue 5: Qwen3-4B-shaped GRPO step, MFU, NCCL) is scripts/gpu/run_trainer_check.sh.
#
# Usage: here, `bash scripts/gpu/fetch_debs.sh` (the GPU machine reaches no package registry); then on
# the device machine (repository root, with carry=["gpu_debs"]): OUT=/some/dir scripts/gpu/run_checks.sh
set -uo pipefail
OUT=${OUT:-$PWD/gpu_out}
mkdir -p "$OUT"
exec > >(tee "$OUT/run_checks.log") 2>&1
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=$ROOT/build-gpu
PY=${PYTHON:-python3}

echo "== machine"; nvidia-smi | tee "$OUT/nvidia-smi.txt"; date -u
TORCH_PREFIX=$($PY -c 'import torch.utils; print(torch.utils.cmake_prefix_path)') || { echo "no torch in $PY"; exit 1; }
$PY -c 'import torch, sys; print("torch", torch.__version__, "cuda", torch.version.cuda, torch.cuda.is_available())'

echo "== 1. build against $TORCH_PREFIX"
# The Debian build dependencies travel in gpu_debs/ (scripts/gpu/fetch_debs.sh here; carry=["gpu_debs"]).
SPADE_CMAKE_ARGS=(-DCMAKE_PREFIX_PATH="$TORCH_PREFIX")
if [[ -d $ROOT/gpu_debs ]]; then
  source "$ROOT/scripts/gpu/use_debs.sh"
  use_debs "$ROOT/gpu_debs" "$TORCH_PREFIX" "$PY" || exit 1
fi
cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release "${SPADE_CMAKE_ARGS[@]}" \
  -DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc > "$OUT/cmake.log" 2>&1 || { tail -50 "$OUT/cmake.log"; exit 1; }
cmake --build "$BUILD" -j"$(nproc)" --target spade test_policy test_rollout > "$OUT/build.log" 2>&1 \
  || { tail -80 "$OUT/build.log"; exit 1; }
SPADE=$BUILD/bin/spade

echo "== 2. unit tests"
(cd "$BUILD" && OMP_WAIT_POLICY=PASSIVE ctest -R '^(policy|rollout)\.' --output-on-failure -j4) > "$OUT/ctest.log" 2>&1
echo "ctest rc=$?"; tail -5 "$OUT/ctest.log"

echo "== 3. parity vs transformers"
$PY - "$SPADE" "$OUT" <<'PYEOF' | tee "$OUT/parity_transformers.json"
import json, subprocess, sys, tempfile
import torch, transformers
spade, out = sys.argv[1], sys.argv[2]
ids = [1, 5, 9, 33, 2, 96, 40, 41, 42, 7, 7, 7, 0, 13, 64, 80, 3, 5, 11, 70]
common = dict(vocab_size=97, hidden_size=48, intermediate_size=80, num_hidden_layers=2, num_attention_heads=6,
              num_key_value_heads=2, rms_norm_eps=1e-6, max_position_embeddings=256)
cfgs = {
  "llama": transformers.LlamaConfig(**common, rope_theta=500000.0, tie_word_embeddings=False,
        rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                      "original_max_position_embeddings": 64}),
  "qwen2": transformers.Qwen2Config(**common, rope_theta=1e6, tie_word_embeddings=True),
  "qwen3": transformers.Qwen3Config(**common, head_dim=16, rope_theta=1e6, tie_word_embeddings=False),
}
report = {"transformers": transformers.__version__, "results": []}
for name, cfg in cfgs.items():
    torch.manual_seed(0)
    cfg.torch_dtype = torch.float32
    model = transformers.AutoModelForCausalLM.from_config(cfg).eval()
    with torch.no_grad():
        for n, p in model.named_parameters():
            p.add_(torch.randn_like(p) * 0.2)  # non-trivial norms/biases, larger weights
    d = tempfile.mkdtemp(prefix=f"parity_{name}_")
    model.save_pretrained(d, safe_serialization=True)
    with torch.no_grad():
        logits = model(torch.tensor([ids])).logits[0].float()
    lp = torch.log_softmax(logits[:-1], -1).gather(-1, torch.tensor(ids[1:]).unsqueeze(-1)).squeeze(-1)
    ours = json.loads(subprocess.check_output([spade, "score", "--checkpoint", d, "--ids", ",".join(map(str, ids)), "--json"]))
    ours_lp = torch.tensor(ours["logprobs"][1:])
    top = ours["last_top"]
    top_diff = max(abs(logits[-1, i].item() - v) for i, v in top)
    report["results"].append({"family": name, "max_abs_logprob_diff": (ours_lp - lp).abs().max().item(),
                              "max_abs_top20_logit_diff": top_diff, "max_abs_logit": logits.abs().max().item()})
print(json.dumps(report, indent=2))
PYEOF

echo "== 4. sampler bench (GPU, bf16)"
(while sleep 2; do nvidia-smi --query-gpu=memory.used --format=csv,noheader; done) > "$OUT/gpu_memory.log" &
MEM_PID=$!
OMP_WAIT_POLICY=PASSIVE "$SPADE" bench sampler --models tiny,100m --batches 1,16,64 --prompt 512 --new 256 \
  --device cuda --dtype bfloat16 --work-dir "$OUT/bench_ckpt" > "$OUT/bench_sampler_gpu.json"
echo "bench rc=$?"
kill "$MEM_PID" 2>/dev/null
rm -rf "$OUT/bench_ckpt"
echo "peak GPU memory (MiB): $(sort -n "$OUT/gpu_memory.log" | tail -1)"
cat "$OUT/bench_sampler_gpu.json"
