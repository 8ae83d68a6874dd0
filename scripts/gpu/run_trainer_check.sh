#!/usr/bin/env bash
# GPU check of issue 5 (trainer/): the `trainer` phase of scripts/gpu/run_all.sh (a GRPO step through a
# one-rank NCCL group; one GRPO step of a Qwen3-4B-shaped random model, bf16 autocast, activation
# checkpointing, 8 x 4096 tokens: tokens/s, MFU, peak GPU memory). See run_all.sh's header for the
# details, the device tool call and the expected times.
#
# STATUS: run once on an H200 (2026-12-04, bench/RESULTS.md "GPU checks").
#
# Usage (repository root; carry=["gpu_debs"] on the device machine): scripts/gpu/run_trainer_check.sh [--dry-run]
exec bash "$(dirname "$0")/run_all.sh" --phases trainer "$@"
