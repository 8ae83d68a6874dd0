#!/usr/bin/env bash
# GPU checks of issue 4 (policy/, rollout/): the sampler64, parity, sampler16_1 and unittests phases of
# scripts/gpu/run_all.sh (our sampler vs transformers.generate and the plain PyTorch loop at batches 64,
# 16, 1 on Qwen3-0.6B/4B shapes; forward parity vs transformers; the policy and rollout unit tests on
# the CUDA build). See run_all.sh's header for the details, the device tool call and the expected times.
#
# STATUS: run once on an H200 (2026-12-04, bench/RESULTS.md "GPU checks"): sampler64 and parity ran,
# sampler16_1 and unittests are still to run.
#
# Usage (repository root; carry=["gpu_debs"] on the device machine): scripts/gpu/run_checks.sh [--dry-run]
exec bash "$(dirname "$0")/run_all.sh" --phases sampler64,parity,sampler16_1,unittests "$@"
