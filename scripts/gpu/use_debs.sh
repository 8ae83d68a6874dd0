# Sourced (bash) by scripts/gpu/*.sh on the GPU machine, which reaches no package registry: makes the
# Debian packages carried in gpu_debs/ (scripts/gpu/fetch_debs.sh) usable without installing them.
#   use_debs DEBS_DIR TORCH_CMAKE_PREFIX PYTHON
# 1. extracts every DEBS_DIR/*.deb into $SPADE_DEPS (default $PWD/build-gpu-deps) with dpkg-deb, or
#    ar + tar where dpkg is missing;
# 2. when the machine's PyTorch uses the pre-C++11 std::string ABI (torch._C._GLIBCXX_USE_CXX11_ABI
#    false: pip wheels before 2.7), rebuilds yaml-cpp, googletest and sentencepiece from the carried
#    Debian sources with that ABI (their APIs pass std::string) and compiles all of spade with it;
# 3. sets SPADE_CMAKE_ARGS (an array for `cmake -S . -B ...`), LD_LIBRARY_PATH and the pkg-config
#    variables (PKG_CONFIG_LIBDIR limited to the extracted tree, PKG_CONFIG_SYSROOT_DIR = the prefix,
#    so `-I/usr/include` of a .pc file becomes the extracted copy).
# Returns non-zero with a message naming the step that failed. Never installs anything system-wide.
# STATUS: used on an H200 machine (Ubuntu 24.04, torch 2.11 with the C++11 ABI) on 2026-12-04. `scripts/gpu/run_all.sh --dry-run` (phase debs) runs it here:
# unpacking and a CMake configure against Debian's LibTorch; the old-ABI rebuild branch is not
# exercised here (Debian's torch uses the C++11 ABI, as does torch 2.11 on the H200 image).
use_debs() {
  local debs=$1 torch_prefix=$2 py=$3
  local deps=${SPADE_DEPS:-$PWD/build-gpu-deps}
  local arch lib
  arch=$(gcc -dumpmachine 2>/dev/null || echo x86_64-linux-gnu)
  [ -d "$debs" ] || { echo "use_debs: $debs missing (run scripts/gpu/fetch_debs.sh here and carry it)"; return 1; }
  mkdir -p "$deps" && deps=$(cd "$deps" && pwd)  # absolute: it ends up in CMake's include directories
  lib=$deps/usr/lib/$arch
  if [ ! -f "$deps/.extracted" ]; then
    local d tmp
    for d in "$debs"/*.deb; do
      if command -v dpkg-deb > /dev/null; then
        dpkg-deb -x "$d" "$deps" || { echo "use_debs: dpkg-deb -x $d failed"; return 1; }
      else
        tmp=$(mktemp -d)
        (cd "$tmp" && ar x "$d" && tar -xf data.tar.* -C "$deps") || { echo "use_debs: cannot unpack $d (ar/tar)"; rm -rf "$tmp"; return 1; }
        rm -rf "$tmp"
      fi
    done
    touch "$deps/.extracted"
  fi
  local abi
  abi=$("$py" -c 'import torch; print(int(torch._C._GLIBCXX_USE_CXX11_ABI))') || { echo "use_debs: cannot import torch in $py"; return 1; }
  local prefixes="$deps/usr" cxxflags=""
  if [ "$abi" = "0" ]; then
    cxxflags="-D_GLIBCXX_USE_CXX11_ABI=0"
    local abi0=$deps/abi0 src
    if [ ! -f "$abi0/.built" ]; then
      echo "use_debs: PyTorch uses the pre-C++11 string ABI: rebuilding yaml-cpp, googletest, sentencepiece with it"
      for src in yaml-cpp googletest sentencepiece; do
        local tarball dir
        tarball=$(ls "$debs"/src/"$src"_*.orig.tar.* 2>/dev/null | head -1)
        [ -n "$tarball" ] || { echo "use_debs: no $src source in $debs/src"; return 1; }
        dir=$deps/src/$src
        rm -rf "$dir" && mkdir -p "$dir" && tar -xf "$tarball" -C "$dir" --strip-components=1 \
          || { echo "use_debs: cannot unpack $tarball"; return 1; }
        cmake -S "$dir" -B "$dir/build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX="$abi0" \
          -DCMAKE_CXX_FLAGS="$cxxflags" -DBUILD_SHARED_LIBS=ON -DYAML_CPP_BUILD_TESTS=OFF -DYAML_BUILD_SHARED_LIBS=ON \
          -DSPM_ENABLE_SHARED=ON > "$dir/cmake.log" 2>&1 \
          && cmake --build "$dir/build" -j"$(nproc)" > "$dir/build.log" 2>&1 \
          && cmake --install "$dir/build" > "$dir/install.log" 2>&1 \
          || { echo "use_debs: building $src with the old ABI failed (logs in $dir)"; tail -20 "$dir"/*.log; return 1; }
      done
      touch "$abi0/.built"
    fi
    prefixes="$abi0;$prefixes"
    export LD_LIBRARY_PATH=$abi0/lib:$abi0/lib64:${LD_LIBRARY_PATH:-}
  fi
  export LD_LIBRARY_PATH=$lib:$lib/hdf5/serial:${LD_LIBRARY_PATH:-}
  export PKG_CONFIG_LIBDIR=$lib/pkgconfig:$deps/usr/share/pkgconfig
  export PKG_CONFIG_SYSROOT_DIR=$deps
  SPADE_CMAKE_ARGS=(-DCMAKE_PREFIX_PATH="$prefixes;$torch_prefix" -DPython3_EXECUTABLE="$(command -v "$py")"
                    -DHDF5_C_INCLUDE_DIR="$deps/usr/include/hdf5/serial"
                    -DHDF5_C_LIBRARY_hdf5="$lib/hdf5/serial/libhdf5.so"
                    -DCMAKE_CXX_FLAGS="$cxxflags")
  echo "use_debs: $(ls "$debs"/*.deb | wc -l) packages in $deps (torch C++11 ABI: $abi)"
}
