# shellcheck shell=bash
# Sourced (bash) by scripts/gpu/run_all.sh: the one place that configures and builds spade for the GPU
# checks.
#
#   spade_build_env MODE PYTHON   MODE gpu: finds the machine's PyTorch 2.x LibTorch (CUDA) through
#                                 PYTHON (torch.utils.cmake_prefix_path) and makes the Debian packages
#                                 carried in $ROOT/gpu_debs usable (scripts/gpu/use_debs.sh); sets
#                                 SPADE_CMAKE_ARGS and exports LD_LIBRARY_PATH (needed to RUN spade too,
#                                 so call it in every process that runs it). MODE cpu (--dry-run): the
#                                 Debian LibTorch of the CMake build here; SPADE_CMAKE_ARGS empty.
#   spade_build BUILD LOGDIR LIMIT_S TARGET...
#                                 configures BUILD once (Release, Ninja where installed; a marker file
#                                 BUILD/.spade_configured records success, so a configured directory is
#                                 never reconfigured; in cpu mode an existing CMakeCache.txt is also
#                                 left alone, so a CPU build dir given to --dry-run keeps its build
#                                 type; in gpu mode a configure that fails on Python's embedding is
#                                 retried once with -DSPADE_WITH_ENVD=OFF), then builds only TARGET... with
#                                 all cores, under `timeout LIMIT_S`. Logs: LOGDIR/cmake.log,
#                                 LOGDIR/build.log (appended). Returns 0 on success, 124 when the build
#                                 ran out of time (a later call continues incrementally), else non-zero;
#                                 prints the log's tail on failure.
#   spade_cuda_cmake_args NVCC ARCH [HOST_CXX]
#                                 prints (one per line) the CMake arguments of a CUDA build, shared with
#                                 scripts/check_torch2.sh --cuda: PyTorch's CMake package enables the CUDA
#                                 language (Caffe2's public/cuda.cmake), so CMake needs NVCC; ARCH (e.g.
#                                 9.0, the H200's compute capability) is set as TORCH_CUDA_ARCH_LIST and
#                                 CMAKE_CUDA_ARCHITECTURES instead of PyTorch probing for a GPU (none in
#                                 a check root); HOST_CXX: nvcc's host compiler (Debian 13's nvcc 12.4
#                                 accepts GCC <= 13, its default GCC is 14).
#   spade_check_cuda_build BUILD  returns non-zero, naming it, unless BUILD's compile commands contain each
#                                 definition that switches on a CUDA-only part (USE_C10D_NCCL in
#                                 trainer/distributed.cpp, SPADE_CUDA_GRAPHS in policy/decode_graph.cpp,
#                                 SPADE_CUDA_ALLOCATOR_STATS in trainer/device_memory.cpp; CMake sets them
#                                 when LibTorch has CUDA): a CUDA LibTorch that CMake did not recognise as one
#                                 would otherwise build and pass with those parts silently left out.
# Needs ROOT (the repository root) set by the caller.

spade_build_env() {
  local mode=$1 py=$2
  SPADE_BUILD_MODE=$mode
  SPADE_CMAKE_ARGS=()
  [[ $mode == gpu ]] || return 0
  local torch_prefix
  torch_prefix=$("$py" -c 'import torch.utils; print(torch.utils.cmake_prefix_path)') \
    || { echo "spade_build_env: no torch in $py"; return 1; }
  SPADE_CMAKE_ARGS=(-DCMAKE_PREFIX_PATH="$torch_prefix")
  if [[ -d $ROOT/gpu_debs ]]; then
    # shellcheck source=scripts/gpu/use_debs.sh
    source "$ROOT/scripts/gpu/use_debs.sh"
    SPADE_DEPS=${SPADE_DEPS:-$ROOT/build-gpu-deps} use_debs "$ROOT/gpu_debs" "$torch_prefix" "$py" || return 1
  else
    echo "spade_build_env: no gpu_debs/ (carry=[\"gpu_debs\"]): relying on the machine's own -dev packages"
  fi
  # The machine's own pybind11 (pip) before Debian 12's 2.10 from gpu_debs: newer Pythons (3.12 on the
  # H200 image) are supported from pybind11 2.11 on.
  local pyb
  pyb=$("$py" -c 'import pybind11; print(pybind11.get_cmake_dir())' 2> /dev/null) && [[ -d $pyb ]] \
    && SPADE_CMAKE_ARGS+=(-Dpybind11_DIR="$pyb")
  local arch=""
  command -v nvidia-smi > /dev/null \
    && arch=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader -i 0 2> /dev/null | tr -d ' ')
  if [[ -x /usr/local/cuda/bin/nvcc ]]; then
    local a
    while IFS= read -r a; do SPADE_CMAKE_ARGS+=("$a"); done < <(spade_cuda_cmake_args /usr/local/cuda/bin/nvcc "${arch:-9.0}")
  fi
  return 0
}

spade_cuda_cmake_args() {
  local nvcc=$1 arch=$2 host=${3:-}
  echo "-DCMAKE_CUDA_COMPILER=$nvcc"
  echo "-DTORCH_CUDA_ARCH_LIST=$arch"
  echo "-DCMAKE_CUDA_ARCHITECTURES=${arch//./}"
  [[ -n $host ]] && echo "-DCMAKE_CUDA_HOST_COMPILER=$host"
  return 0
}

spade_check_cuda_build() {
  local build=$1 def missing=()
  [[ -f $build/compile_commands.json ]] || { echo "spade_check_cuda_build: no $build/compile_commands.json"; return 1; }
  for def in USE_C10D_NCCL SPADE_CUDA_GRAPHS SPADE_CUDA_ALLOCATOR_STATS; do
    grep -q -- "-D$def" "$build/compile_commands.json" || missing+=("$def")
  done
  if (( ${#missing[@]} )); then
    echo "spade_check_cuda_build: $build compiled nothing with ${missing[*]}: CMake did not see a CUDA LibTorch (TORCH_CUDA_LIBRARIES empty; see its cmake.log)"
    return 1
  fi
  echo "spade_check_cuda_build: USE_C10D_NCCL, SPADE_CUDA_GRAPHS, SPADE_CUDA_ALLOCATOR_STATS compiled in $build"
}

spade_build() {
  local build=$1 logdir=$2 limit=$3
  shift 3
  mkdir -p "$logdir"
  (( limit >= 1 )) || { echo "spade_build: no time left ($limit s)"; return 124; }
  # --dry-run (cpu) on a build directory configured by someone else: build it as it is.
  if [[ ! -f $build/.spade_configured && ( ${SPADE_BUILD_MODE:-gpu} == gpu || ! -f $build/CMakeCache.txt ) ]]; then
    local gen=()
    [[ ! -f $build/CMakeCache.txt ]] && command -v ninja > /dev/null && gen=(-G Ninja)
    echo "spade_build: configuring $build"
    if ! timeout "$limit" cmake -S "$ROOT" -B "$build" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release "${SPADE_CMAKE_ARGS[@]}" \
        > "$logdir/cmake.log" 2>&1; then
      # A GPU image's python3 without Python.h / libpython (no python3-dev): everything but spade-envd.
      if [[ ${SPADE_BUILD_MODE:-gpu} == gpu ]] && grep -qE 'Python3|pybind11' "$logdir/cmake.log"; then
        echo "spade_build: configure failed on Python's embedding (see cmake.log); again with -DSPADE_WITH_ENVD=OFF"
        grep -E 'Could NOT find|Python3|pybind11' "$logdir/cmake.log" | head -5
        mv "$logdir/cmake.log" "$logdir/cmake_with_envd.log"
        timeout "$limit" cmake -S "$ROOT" -B "$build" -DCMAKE_BUILD_TYPE=Release "${SPADE_CMAKE_ARGS[@]}" \
          -DSPADE_WITH_ENVD=OFF > "$logdir/cmake.log" 2>&1 \
          || { echo "spade_build: cmake failed (or timed out), $logdir/cmake.log:"; tail -40 "$logdir/cmake.log"; return 1; }
      else
        echo "spade_build: cmake failed (or timed out), $logdir/cmake.log:"; tail -40 "$logdir/cmake.log"; return 1
      fi
    fi
    touch "$build/.spade_configured"
  fi
  echo "spade_build: $* in $build ($(nproc) jobs, at most $limit s)"
  local rc=0
  timeout "$limit" cmake --build "$build" -j"$(nproc)" --target "$@" >> "$logdir/build.log" 2>&1 || rc=$?
  if [[ $rc == 124 ]]; then
    echo "spade_build: timed out after $limit s; run again to continue (incremental)"
  elif [[ $rc != 0 ]]; then
    echo "spade_build: build failed (rc $rc), $logdir/build.log:"; grep -E 'error|Error' "$logdir/build.log" | head -20
    tail -40 "$logdir/build.log"
  fi
  return "$rc"
}
