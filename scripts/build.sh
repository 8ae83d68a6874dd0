#!/usr/bin/env bash
# Configures and builds spade into build/ (Release-with-debug-info, -j2 by default).
set -euo pipefail
cd "$(dirname "$0")/.."
JOBS="${JOBS:-2}"
mkdir -p build
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo > build/configure.log 2>&1 || { cat build/configure.log; exit 1; }
cmake --build build -j"$JOBS" "$@"
