#!/usr/bin/env bash
# Data-parallel `spade train` on one machine with torchrun (python3-torch ships /usr/bin/torchrun).
#
#   scripts/launch/single_node.sh NPROC [spade train options...]
#   e.g. scripts/launch/single_node.sh 2 --set selfplay.steps=16 --name dp2
#        scripts/launch/single_node.sh 8 --config configs/games-qwen3-4b.yaml --set model.init_checkpoint=DIR
#        8 GPUs with the optimizer state sharded (ZeRO-1, which configs/games-qwen3-8b.yaml sets) or the
#        gradients too (ZeRO-2), checked first with the same --set and --dry-run:
#        scripts/launch/single_node.sh 8 --config configs/games-qwen3-8b.yaml --set model.init_checkpoint=DIR \
#          --set distributed.sharding=gradients
#
# distributed.sharding (none | optimizer | gradients | full, trainer/sharding.h; configs/games-qwen3-30b-a3b.yaml
# sets full, which needs train.activation_checkpointing): each rank then writes its own
# optimizer_shard_RRRRR_of_WWWWW.pt into every checkpoint, and a resume re-shards them onto however
# many ranks it is launched with.
#
# torchrun starts NPROC copies of `spade train ...` (--no-python: spade is a binary, not a script) with
# MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE set; spade's ranks meet in a
# c10d TCPStore (hosted by torchrun's agent: TORCHELASTIC_USE_AGENT_STORE=True) and use Gloo on CPU
# (NCCL on a CUDA build with GPUs; `--set distributed.backend=gloo|nccl` to choose). Rank 0 writes the
# run directory and logs; the others print nothing unless they fail. Each rank gets cores/NPROC
# intra-op threads unless run.threads is set. `spade train --nproc NPROC ...` does the same without
# torchrun.
set -euo pipefail
NPROC=${1:?usage: $0 NPROC [spade train options...]}
shift
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
SPADE=${SPADE:-$ROOT/build/bin/spade}
# Debian 12's torchrun (torch 1.13 under Python 3.11) crashes on its default "--redirects 0"
# ("'NoneType' object has no attribute 'get'": Python 3.11 no longer iterates the zero Std flag);
# a mapping for a rank that does not exist ("9:1") leaves every real rank unredirected.
EXTRA=()
TORCHRUN_PY=$(head -n 1 "$(command -v torchrun)" | sed 's/^#! *//')   # the interpreter torchrun runs on
if $TORCHRUN_PY -c 'import sys, torch; sys.exit(0 if torch.__version__.startswith("1.") else 1)' 2>/dev/null; then
  EXTRA=(--redirects 9:1 --tee 9:1)
fi
# --standalone: a private rendezvous on a free local port (no MASTER_* to pick).
# Underscore spellings: torch 1.13 (Debian) knows only these; torch 2.x accepts both.
exec torchrun --standalone --nnodes 1 --nproc_per_node "$NPROC" "${EXTRA[@]}" --no_python "$SPADE" train "$@"
