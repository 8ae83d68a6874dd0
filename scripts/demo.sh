#!/usr/bin/env bash
# The main job (README): install packages, build, run `spade train` on the embedded default config
# (configs/games-tiny.yaml). Extra arguments go to `spade train`, e.g. --set selfplay.steps=16.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh --target spade spade-envd
exec build/bin/spade train "$@"
