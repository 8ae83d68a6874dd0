#!/usr/bin/env bash
# The main job (README): install packages, build, run `spade train` on the embedded default config
# (configs/games-tiny.yaml). Extra arguments go to `spade train`, e.g. --set selfplay.steps=16.
#
# Running it again never mixes with or replaces an earlier run: unless the arguments choose the run
# themselves (--name, --resume, --overwrite, --config, or --set run.name=/run.out_dir=), the run goes
# to runs/games-tiny, or to the first of runs/games-tiny-2, runs/games-tiny-3, ... that does not exist.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh --target spade spade-envd

name_args=()
chosen=0
for arg in "$@"; do
  case "$arg" in
    --name|--name=*|--resume|--resume=*|--overwrite|--config|--config=*|run.name=*|run.out_dir=*) chosen=1 ;;
  esac
done
if [[ $chosen == 0 ]]; then
  name=games-tiny
  n=1
  while [[ -e runs/$name ]]; do
    n=$((n + 1))
    name=games-tiny-$n
  done
  name_args=(--name "$name")
  echo "demo: this run goes to runs/$name"
fi
exec build/bin/spade train "${name_args[@]}" "$@"
