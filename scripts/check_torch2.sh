#!/usr/bin/env bash
# check_torch2.sh: builds spade against LibTorch 2.6 in a Debian 13 (trixie) root and runs its tests,
# on a machine without a GPU (issue 22). The root, the downloaded packages, ccache and the build live
# under .cache/torch2/ (git-ignored); every step is skipped when its result is already there, so a rerun
# only rebuilds what changed and reruns the tests. Safe to interrupt: the root is bootstrapped into
# root-*.tmp and renamed when complete, apt resumes (dpkg --configure -a) where it stopped.
#
#   bash scripts/check_torch2.sh            LibTorch 2.6 (CPU, libtorch-dev): build everything, full ctest
#   bash scripts/check_torch2.sh --cuda     LibTorch 2.6 (CUDA, libtorch-cuda-dev, contrib) with Debian 13's
#                                           CUDA 12.4 toolkit (non-free), NCCL and Gloo (CUDA): the CUDA
#                                           build (USE_C10D_NCCL, CUDA graphs, allocator stats, SDPA and bf16
#                                           paths) compiled and linked, its tests run on the CPU (the GPU-only
#                                           ones skip, saying why)
#   options:  --shell   open a shell in the root (mounts as for the build) instead of building
#             --no-test build only
#   environment: JOBS (build and ctest parallelism, default 2), TARGETS (build only these, e.g.
#             "test_envsandbox"; default all), CTEST_ARGS (extra ctest arguments, e.g. "-R ^envsandbox\."),
#             TORCH2_CACHE (default .cache/torch2 in the repository)
#
# Needs root (bootstrapping a root file system and entering it with bubblewrap both do), mmdebstrap
# (installed here with apt-get when missing), bubblewrap (scripts/setup.sh) and ~5 GiB free (CPU) or
# ~20 GiB (--cuda; both roots: ~25 GiB). Network: the Debian archive only.
#
# The archive: read at run time from the host's APT configuration (scripts/lib/debian_sources.sh: the
# `Types: deb` stanzas of /etc/apt/sources.list.d/debian.sources, or /etc/apt/sources.list). Each
# stanza's suites are renamed from the host's codename to trixie (bookworm-updates -> trixie-updates,
# ...), with the components main contrib non-free, and its Signed-By keyring is copied into the root.
# The host's own stanzas are added as `Types: deb-src` (as scripts/setup.sh does on the host): the
# SWE-Duel tests fetch pinned Debian 12 source packages with `apt-get source`.
#
# Entering the root: bubblewrap (bwrap --bind ROOT /), not chroot: it makes a private mount namespace
# in which /proc and /sys (the host's, bound recursively: /sys with its cgroup hierarchies, which the
# sandbox tests need) and /dev (bwrap's minimal tmpfs with its own devpts) exist for the command's life only;
# nothing is ever mounted in the host's namespace, so nothing can be left mounted (or unmounted) on
# the host, whatever kills the script. The root is entered by pivot_root, not chroot, so the nested
# bubblewrap of the sandbox tests (spade-envd) works inside as it does on the host; /proc is the host's
# bound, not a new procfs (`--proc`), because bwrap covers parts of a procfs it mounts (/proc/sys ...)
# and the kernel then refuses the nested sandbox's own procfs in its new user namespace ("Can't mount
# proc on /proc: Operation not permitted", checked). Mounted inside:
# the repository read-only at /src (the current tree is what gets built), BUILD at /build, the package
# cache at /var/cache/apt/archives, ccache's directory at /ccache, a scratch /tmp.
#
# cuDNN (--cuda): libtorch-cuda-2.6 depends on nvidia-cudnn, an installer that downloads cuDNN from
# NVIDIA at install time and cannot work here. A local placeholder package of that name (built below
# with dpkg-deb, version 9.0.0.312~cuda12+spade1) satisfies the dependency; it ships libcudnn.so.9,
# copied from the host's CUDA tree (/usr/local/cuda/lib64; CUDA_HOME overrides), which is cuDNN's small
# front-end library (its engines are loaded with dlopen only when a cuDNN call is made: never on the
# CPU). libtorch_cuda.so names libcudnn.so.9 as NEEDED, so the link and every test binary need it.
# Without a host cuDNN the script stops and says so.
#
# Results (appended, one line per run): .cache/torch2/results-{cpu,cuda}.txt; logs in
# .cache/torch2/logs-{cpu,cuda}/. Exit status: 0 when the build and every test passed.
set -euo pipefail

REPO=$(cd "$(dirname "$0")/.." && pwd)
VARIANT=cpu SHELL_ONLY=0 NO_TEST=0
INSIDE=""
while [[ $# -gt 0 ]]; do
  case $1 in
    --cuda) VARIANT=cuda ;;
    --shell) SHELL_ONLY=1 ;;
    --no-test) NO_TEST=1 ;;
    --inside) INSIDE=$2; shift ;;   # internal: the step to run inside the root
    *) echo "check_torch2.sh: unknown argument '$1' (--cuda, --shell, --no-test)" >&2; exit 2 ;;
  esac
  shift
done
JOBS=${JOBS:-2}
SUITE=trixie
CUDNN_PLACEHOLDER_VERSION=9.0.0.312~cuda12+spade1

log() { echo "check_torch2 [$VARIANT]: $*"; }
die() { echo "check_torch2 [$VARIANT]: error: $*" >&2; exit 1; }

# ---------------------------------------------------------------------------------------------------
# Inside the root (run through `enter`, as root, in /): the steps that use the root's own tools.
# ---------------------------------------------------------------------------------------------------
inside_build() {
  export CCACHE_DIR=/ccache CCACHE_BASEDIR=/src CCACHE_MAXSIZE=6G
  local args=(-S /src -B /build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo)
  if [[ $VARIANT == cuda ]]; then
    # As scripts/gpu/ configures on a GPU machine: Debian 13's nvcc 12.4 with the GCC it accepts, and
    # Hopper (9.0, the H200 of scripts/gpu/) instead of probing for a GPU.
    # shellcheck source=scripts/gpu/build.sh
    source /src/scripts/gpu/build.sh
    mapfile -t -O "${#args[@]}" args < <(spade_cuda_cmake_args /usr/bin/nvcc 9.0 /usr/bin/g++-13)
  fi
  if [[ ! -f /build/build.ninja ]]; then
    cmake "${args[@]}" > /build/configure.log 2>&1 || { tail -60 /build/configure.log; return 1; }
  fi
  # -k 0: every failing translation unit in one pass, not only the first
  local targets=()
  # shellcheck disable=SC2206  # TARGETS is a list of target names
  [[ -n ${TARGETS:-} ]] && targets=(--target $TARGETS)
  nice -n 10 cmake --build /build -j"$JOBS" "${targets[@]}" -- -k 0
}

inside_test() {
  cd /build
  # shellcheck disable=SC2086  # CTEST_ARGS is a list of arguments
  nice -n 10 ctest --output-on-failure -j"$JOBS" --output-junit /build/ctest-junit.xml ${CTEST_ARGS:-}
}

if [[ -n $INSIDE ]]; then
  case $INSIDE in
    build) inside_build ;;
    test) inside_test ;;
    *) die "unknown inside step $INSIDE" ;;
  esac
  exit $?
fi

# ---------------------------------------------------------------------------------------------------
# On the host.
# ---------------------------------------------------------------------------------------------------
[[ $(id -u) -eq 0 ]] || die "needs root: it bootstraps a Debian root file system (mmdebstrap) and enters it with bubblewrap (mount namespaces, pivot_root); run it as root or with sudo"
command -v bwrap > /dev/null || die "bubblewrap missing (bash scripts/setup.sh, or apt-get install bubblewrap)"
if ! command -v mmdebstrap > /dev/null; then
  log "installing mmdebstrap (Debian package) on the host"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends mmdebstrap > /dev/null \
    || die "apt-get install mmdebstrap failed"
fi

CACHE=${TORCH2_CACHE:-$REPO/.cache/torch2}
ROOTFS=$CACHE/root-$VARIANT
BUILD=$CACHE/build-$VARIANT
APTCACHE=$CACHE/apt-archives       # shared by both roots: a package is downloaded once
CCACHE=$CACHE/ccache
SCRATCH=$CACHE/tmp-$VARIANT
LOGS=$CACHE/logs-$VARIANT
mkdir -p "$CACHE" "$BUILD" "$APTCACHE/partial" "$CCACHE" "$SCRATCH" "$LOGS"
chmod 1777 "$SCRATCH"   # /tmp in the root: apt's _apt user writes there too

need_gib=$([[ $VARIANT == cuda ]] && echo 20 || echo 5)
[[ -d $ROOTFS ]] && need_gib=2
avail_gib=$(df -BG --output=avail "$CACHE" | tail -1 | tr -dc 0-9)
log "$(df -h "$CACHE" | tail -1 | awk '{print "disk " $1 ": " $4 " free of " $2}')"
(( avail_gib >= need_gib )) || die "only ${avail_gib} GiB free under $CACHE, needs ~${need_gib} GiB"

# Never rm -rf a directory that has something mounted inside it (it would descend into the mount).
assert_unmounted() {
  local m
  m=$(findmnt -rn -o TARGET | awk -v p="$1" 'index($0, p) == 1' || true)
  [[ -z $m ]] || die "still mounted under $1 (not removing it): $m"
}

# ---- the archive, from the host's APT configuration
# shellcheck source=scripts/lib/debian_sources.sh
source "$REPO/scripts/lib/debian_sources.sh"
HOST_STANZAS=$(debian_stanzas) || die "no Debian archive entry in /etc/apt/sources.list.d/debian.sources or /etc/apt/sources.list"
HOST_CODENAME=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
[[ -n $HOST_CODENAME ]] || die "no VERSION_CODENAME in /etc/os-release: cannot map the host's suites to $SUITE"
# The root's stanzas: suites renamed to trixie, contrib and non-free added, keyrings by their path in the
# root (/etc/apt/keyrings/host-NAME, copied from the host). Printed as "keyring-on-host" lines first.
root_sources() {
  printf '%s\n' "$HOST_STANZAS" | awk -v from="$HOST_CODENAME" -v to="$SUITE" '
    BEGIN { RS = ""; FS = "\n" }
    {
      printf "%sTypes: deb\n", (n++ ? "\n" : "")
      for (i = 1; i <= NF; i++) {
        if ($i ~ /^Suites:/) {
          k = split(substr($i, 8), s, " "); line = "Suites:"
          for (j = 1; j <= k; j++) {
            if (index(s[j], from) != 1) { print "suite " s[j] " does not start with " from > "/dev/stderr"; exit 1 }
            line = line " " to substr(s[j], length(from) + 1)
          }
          print line
        } else if ($i ~ /^Components:/) {
          print "Components: main contrib non-free"
        } else if ($i ~ /^Signed-By:/) {
          path = $i; sub(/^Signed-By:[ \t]*/, "", path); n2 = split(path, parts, "/")
          print "Signed-By: /etc/apt/keyrings/host-" parts[n2]
        } else print $i
      }
    }'
  printf '\n'
  printf '%s\n' "$HOST_STANZAS" | awk 'BEGIN { RS = ""; ORS = "\n\n" } { print "Types: deb-src\n" $0 }'
}
SOURCES=$(root_sources) || die "cannot derive the $SUITE entries from the host's ($HOST_CODENAME)"
mapfile -t KEYRINGS < <(printf '%s\n' "$HOST_STANZAS" | sed -n 's/^Signed-By:[[:space:]]*//p' | sort -u)
for k in "${KEYRINGS[@]}"; do [[ -f $k ]] || die "keyring $k (Signed-By in the host's sources) is not a file"; done

# ---- packages: scripts/setup.sh's list, with the CUDA builds of what has one
mapfile -t BASE_PKGS < <(sed -n '/^PACKAGES=(/,/^)/p' "$REPO/scripts/setup.sh" | sed 's/#.*//; s/PACKAGES=(//; s/)//' | tr -s ' \t' '\n\n' | grep -v '^$')
(( ${#BASE_PKGS[@]} > 10 )) || die "could not read PACKAGES from scripts/setup.sh"
PKGS=()
for p in "${BASE_PKGS[@]}"; do
  if [[ $VARIANT == cuda ]]; then
    case $p in
      libtorch-dev) p=libtorch-cuda-dev ;;   # contrib; conflicts with libtorch-dev
      python3-torch) p=python3-torch-cuda ;;
      libgloo-dev) p=libgloo-cuda-dev ;;
    esac
  fi
  PKGS+=("$p")
done
# --cuda: nvcc (12.4), NCCL, the GCC that nvcc 12.4 accepts, and libcuda1, the driver's user space
# library that libtorch-cuda-2.6 depends on (CUDA's runtime opens it with dlopen; without a GPU, cuInit
# reports no device and torch::cuda::is_available() is false).
[[ $VARIANT == cuda ]] && PKGS+=(nvidia-cuda-toolkit libnccl-dev g++-13 libcuda1)

# ---- entering the root
enter() {  # enter [--ro] CMD...: runs CMD in the root, as root with all capabilities, in a private mount namespace
  local env=(--clearenv --setenv PATH /usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
             --setenv HOME /root --setenv LANG C.UTF-8 --setenv TERM "${TERM:-dumb}"
             --setenv DEBIAN_FRONTEND noninteractive --setenv JOBS "$JOBS" --setenv VARIANT "$VARIANT"
             --setenv CTEST_ARGS "${CTEST_ARGS:-}" --setenv TARGETS "${TARGETS:-}"
             --setenv NODE_EXTRA_CA_CERTS /etc/ssl/certs/ca-certificates.crt)
  bwrap --bind "$ROOTFS" / --dev /dev --bind /proc /proc --bind /sys /sys \
    --bind "$SCRATCH" /tmp --ro-bind /etc/resolv.conf /etc/resolv.conf \
    --ro-bind "$REPO" /src --bind "$BUILD" /build --bind "$CCACHE" /ccache \
    --bind "$APTCACHE" /var/cache/apt/archives \
    --cap-add ALL --die-with-parent "${env[@]}" --chdir / "$@"
}

timings=()
stage_time() { timings+=("$1 $2s"); }

# ---- 1. bootstrap (mmdebstrap: Debian's essential set, apt, ca-certificates)
if [[ ! -f $ROOTFS/.spade/bootstrap.done ]]; then
  tmp=$ROOTFS.tmp
  assert_unmounted "$tmp"
  rm -rf --one-file-system "$tmp"
  printf '%s\n' "$SOURCES" | awk 'BEGIN { RS = ""; ORS = "\n\n" } /Types: deb\n/' > "$CACHE/bootstrap.sources"
  # mmdebstrap reads the keyrings from the host paths: point the bootstrap's Signed-By there.
  for k in "${KEYRINGS[@]}"; do sed -i "s|/etc/apt/keyrings/host-$(basename "$k")|$k|" "$CACHE/bootstrap.sources"; done
  log "bootstrapping Debian $SUITE into $tmp"
  t=$SECONDS
  # Its own private mount namespace: whatever mmdebstrap mounts in the new root vanishes with it.
  unshare --mount --propagation private \
    nice -n 10 mmdebstrap --mode=root --variant=apt --include=ca-certificates --skip=download/empty --skip=essential/unlink \
      --setup-hook="mkdir -p \"\$1/var/cache/apt/archives\" && cp -a $APTCACHE/. \"\$1/var/cache/apt/archives/\"" \
      --customize-hook="cp -an \"\$1\"/var/cache/apt/archives/*.deb $APTCACHE/ 2>/dev/null || true" \
      "$SUITE" "$tmp" "$CACHE/bootstrap.sources" > "$LOGS/bootstrap.log" 2>&1 \
    || { tail -20 "$LOGS/bootstrap.log"; die "mmdebstrap failed ($LOGS/bootstrap.log)"; }
  assert_unmounted "$tmp"
  rm -f "$tmp"/var/cache/apt/archives/*.deb
  mkdir -p "$tmp/etc/apt/keyrings" "$tmp/.spade" "$tmp/src" "$tmp/build" "$tmp/ccache"
  for k in "${KEYRINGS[@]}"; do cp "$k" "$tmp/etc/apt/keyrings/host-$(basename "$k")"; done
  rm -f "$tmp/etc/apt/sources.list" "$tmp"/etc/apt/sources.list.d/*
  printf '%s\n' "$SOURCES" > "$tmp/etc/apt/sources.list.d/debian.sources"
  cat > "$tmp/etc/apt/apt.conf.d/90spade" <<'EOF'
APT::Install-Recommends "false";
APT::Keep-Downloaded-Packages "true";
Binary::apt::APT::Keep-Downloaded-Packages "true";
EOF
  touch "$tmp/etc/resolv.conf"
  touch "$tmp/.spade/bootstrap.done"
  mv "$tmp" "$ROOTFS"
  stage_time bootstrap $((SECONDS - t))
fi

# ---- 2. packages (skipped when the list and the sources are unchanged)
want_pkgs="$(printf '%s\n' "$SOURCES" "${PKGS[@]}")"
if [[ $VARIANT == cuda ]]; then
  CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
  cudnn=$(ls "$CUDA_HOME"/lib64/libcudnn.so.9 "$CUDA_HOME"/lib/libcudnn.so.9 2>/dev/null | head -1 || true)
  [[ -n $cudnn ]] || die "no libcudnn.so.9 under $CUDA_HOME (lib64 or lib): libtorch_cuda.so needs it to link and load; set CUDA_HOME to a CUDA tree with cuDNN 9"
  want_pkgs+=$'\n'"nvidia-cudnn placeholder $CUDNN_PLACEHOLDER_VERSION $(sha256sum "$cudnn" | cut -c1-16)"
fi
if [[ "$(cat "$ROOTFS/.spade/packages" 2>/dev/null)" != "$want_pkgs" ]]; then
  t=$SECONDS
  printf '%s\n' "$SOURCES" > "$ROOTFS/etc/apt/sources.list.d/debian.sources"
  for k in "${KEYRINGS[@]}"; do cp "$k" "$ROOTFS/etc/apt/keyrings/host-$(basename "$k")"; done
  log "apt-get install ${#PKGS[@]} packages ($LOGS/apt.log)"
  enter sh -c 'dpkg --configure -a && apt-get update -q' > "$LOGS/apt.log" 2>&1 \
    || { tail -20 "$LOGS/apt.log"; die "apt-get update in the root failed ($LOGS/apt.log)"; }
  local_debs=()
  if [[ $VARIANT == cuda ]]; then
    # The placeholder for nvidia-cudnn (see the header): cuDNN's front-end library from the host.
    pkg=$ROOTFS/root/nvidia-cudnn-placeholder
    rm -rf "$pkg" && mkdir -p "$pkg/DEBIAN" "$pkg/usr/lib/x86_64-linux-gnu"
    cp "$cudnn" "$pkg/usr/lib/x86_64-linux-gnu/libcudnn.so.9"
    ln -s libcudnn.so.9 "$pkg/usr/lib/x86_64-linux-gnu/libcudnn.so"
    cat > "$pkg/DEBIAN/control" <<EOF
Package: nvidia-cudnn
Version: $CUDNN_PLACEHOLDER_VERSION
Architecture: amd64
Maintainer: spade check_torch2.sh <nobody@localhost>
Provides: libcudnn.so.9, libcudnn.so, libcudnn-dev
Section: contrib/libs
Priority: optional
Description: placeholder for Debian's nvidia-cudnn installer (spade scripts/check_torch2.sh)
 Debian's nvidia-cudnn downloads cuDNN from NVIDIA when installed, which cannot work offline.
 This package ships only libcudnn.so.9 ($(basename "$(dirname "$cudnn")") of the host's CUDA tree,
 cuDNN's front-end library), enough to link and load libtorch_cuda.so on a machine without a GPU.
EOF
    enter dpkg-deb --root-owner-group --build /root/nvidia-cudnn-placeholder /root/nvidia-cudnn-placeholder.deb >> "$LOGS/apt.log" 2>&1 \
      || die "building the nvidia-cudnn placeholder failed ($LOGS/apt.log)"
    local_debs=(/root/nvidia-cudnn-placeholder.deb)
  fi
  enter nice -n 10 apt-get install -y -q "${local_debs[@]}" "${PKGS[@]}" >> "$LOGS/apt.log" 2>&1 \
    || { tail -30 "$LOGS/apt.log"; die "apt-get install in the root failed ($LOGS/apt.log)"; }
  printf '%s\n' "$want_pkgs" > "$ROOTFS/.spade/packages"
  stage_time packages $((SECONDS - t))
fi

# ---- 2b. the host's locally added certificate authorities (/usr/local/share/ca-certificates: a proxy's
# CA, say), trusted in the root too, so its npm reaches the registry as the host's does (the Node SDK
# and JavaScript duel tests install packages); Node reads the system bundle through NODE_EXTRA_CA_CERTS.
want_cas=$(cd /usr/local/share/ca-certificates 2>/dev/null && find . -name '*.crt' -type f -exec sha256sum {} + | sort || true)
if [[ "$(cat "$ROOTFS/.spade/local_cas" 2>/dev/null)" != "$want_cas" ]]; then
  rm -rf "$ROOTFS/usr/local/share/ca-certificates" && mkdir -p "$ROOTFS/usr/local/share/ca-certificates"
  [[ -z $want_cas ]] || cp -r /usr/local/share/ca-certificates/. "$ROOTFS/usr/local/share/ca-certificates/"
  enter update-ca-certificates --fresh >> "$LOGS/apt.log" 2>&1 || die "update-ca-certificates in the root failed ($LOGS/apt.log)"
  printf '%s\n' "$want_cas" > "$ROOTFS/.spade/local_cas"
fi

if [[ $SHELL_ONLY == 1 ]]; then
  log "shell in $ROOTFS (source /src, build /build); exit to leave"
  enter bash -i
  exit $?
fi

# ---- 3. tokenizer files for tests/policy (as scripts/test.sh; only warns when the registry is unreachable)
bash "$REPO/scripts/fetch_tokenizers.sh" > "$LOGS/tokenizers.log" 2>&1 || { tail -5 "$LOGS/tokenizers.log"; die "fetch_tokenizers.sh failed"; }

# ---- 4. build (configure once, then incremental; ccache in .cache/torch2/ccache)
t=$SECONDS
log "building ${TARGETS:-all targets} in $BUILD (-j$JOBS, log $LOGS/build.log)"
rc=0
enter bash /src/scripts/check_torch2.sh --inside build $([[ $VARIANT == cuda ]] && echo --cuda) > "$LOGS/build.log" 2>&1 || rc=$?
stage_time build $((SECONDS - t))
if [[ $rc != 0 ]]; then
  grep -E 'error|Error' "$LOGS/build.log" | head -30; tail -20 "$LOGS/build.log"
  die "build failed (rc $rc, $LOGS/build.log)"
fi
torch_version=$(dpkg-query --admindir="$ROOTFS/var/lib/dpkg" -W -f='${db:Status-Status} ${Package} ${Version}\n' \
                  'libtorch2*' 'libtorch-cuda-2*' 2>/dev/null | awk '$1 == "installed" { print $2 " " $3; exit }' || true)
if [[ $VARIANT == cuda ]]; then
  # Every CUDA-only part was compiled: the definitions that switch them on are in the compile commands.
  # shellcheck source=scripts/gpu/build.sh
  source "$REPO/scripts/gpu/build.sh"
  spade_check_cuda_build "$BUILD" || die "not a CUDA build"
fi

# ---- 5. tests
summary="build ok"
trc=0
if [[ $NO_TEST == 0 ]]; then
  t=$SECONDS
  log "ctest -j$JOBS ${CTEST_ARGS:-} (log $LOGS/ctest.log)"
  enter bash /src/scripts/check_torch2.sh --inside test $([[ $VARIANT == cuda ]] && echo --cuda) > "$LOGS/ctest.log" 2>&1 || trc=$?
  stage_time tests $((SECONDS - t))
  tail -40 "$LOGS/ctest.log"
  junit=$BUILD/ctest-junit.xml
  if [[ -f $junit ]]; then
    summary=$(python3 - "$junit" <<'PYEOF'
import sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
suite = root if root.tag == "testsuite" else root.find("testsuite")
total, failed, skipped = (int(suite.get(k, 0)) for k in ("tests", "failures", "skipped"))
failed += int(suite.get("errors", 0) or 0)
print(f"{total - failed - skipped} passed, {failed} failed, {skipped} skipped")
PYEOF
)
  fi
fi
size=$(du -sh --one-file-system "$ROOTFS" | cut -f1)
dl=$(du -sh "$APTCACHE" | cut -f1)
line="$(date -u +%FT%TZ) $VARIANT ${torch_version:-torch ?} $(git -C "$REPO" rev-parse --short HEAD 2>/dev/null || echo ?): ${TARGETS:+targets $TARGETS, }${CTEST_ARGS:+ctest $CTEST_ARGS: }$summary; root $size, package cache (both roots) $dl; ${timings[*]}"
echo "$line" >> "$CACHE/results-$VARIANT.txt"
log "$line"
[[ $trc == 0 ]] || die "ctest failed (rc $trc): $LOGS/ctest.log"
