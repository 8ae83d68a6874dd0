#!/usr/bin/env bash
# Installs every Debian package spade needs (idempotent). Debian 12; run as root (or with sudo).
set -euo pipefail

PACKAGES=(
  build-essential cmake ninja-build ccache pkg-config git
  dpkg-dev                                   # SWE-Duel: `apt-get source` (debian:NAME=VERSION repos) needs dpkg-source
  libtorch-dev libopenblas0-pthread          # LibTorch 1.13 (CPU); OpenBLAS: ~10x faster matmul
  libblas-dev                                # link-time BLAS for the CPU decode kernel (runs on OpenBLAS)
  libsentencepiece-dev                       # tokenizer training and encoding
  libpcre2-dev libicu-dev                    # tokenizer.json BPE: pre-tokenizer regex (\p{L}), NFC normalizer
  pybind11-dev python3-dev python3-numpy     # spade-envd embeds CPython
  python3-sympy                              # corpus: mathematics and physics documentation
  python3-pytest                             # SWE-Duel: pytest adapter and the pyfix fixture repository
  golang-go                                  # SWE-Duel: the Go arena repository (go test -json)
  default-jdk-headless junit4 libcommons-lang3-java  # SWE-Duel: the Java arena repository (javac, JUnit 4, its test dependency)
  python3-torch                              # policy parity reference + sampler bench baseline (tests/policy, bench/)
  bubblewrap libseccomp-dev                  # sandbox layers
  libhdf5-dev libcurl4-openssl-dev libsqlite3-dev libgloo-dev
  python3-h5py                               # tests/trainer reads rollouts.h5 back
  libyaml-cpp-dev nlohmann-json3-dev libcli11-dev
  libgtest-dev libgmock-dev
  chromium zlib1g-dev                        # tests load the HTML reports headless and decode the screenshots
  libarchive-dev                             # SWE-Duel: leaderboard contribution archives (duel export / import)
  libcpp-httplib-dev                         # spade serve: the HTTP server (cpp-httplib 0.11)
  nodejs npm                                 # spade serve's test: the official OpenAI Node SDK (npm install openai, the version the test names)
)

# Packages a command already on PATH stands for: NodeSource's nodejs bundles npm and conflicts with
# Debian's npm package, so a working `npm` (or `node`) counts as installed.
declare -A COMMAND_OF=([nodejs]=node [npm]=npm)

SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"

# SWE-Duel repositories from Debian source packages (configs/duel/repos/*.yaml, `source: debian:...`)
# need a deb-src entry; Debian 12 images ship only `Types: deb`. Mirror the Debian stanzas of
# /etc/apt/sources.list.d/debian.sources (URIs, Suites, Components, Signed-By) as `Types: deb-src` in
# spade-src.sources (or deb-src lines for a one-line /etc/apt/sources.list) and refresh the index once.
# Idempotent: nothing is written when an identical file exists or a deb-src entry is already configured.
SRC_FILE=/etc/apt/sources.list.d/spade-src.sources
have_src() {
  grep -qsE '^[[:space:]]*deb-src[[:space:]]' /etc/apt/sources.list /etc/apt/sources.list.d/*.list && return 0
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] && [ "$f" != "$SRC_FILE" ] && grep -qsiE '^Types:.*deb-src' "$f" && return 0
  done
  return 1
}
want_src=""
if [ -f /etc/apt/sources.list.d/debian.sources ]; then
  # shellcheck source=scripts/lib/debian_sources.sh
  source "$(dirname "$0")/lib/debian_sources.sh"
  want_src="$(debian_stanzas /etc/apt/sources.list.d/debian.sources \
    | awk 'BEGIN { RS = ""; ORS = "\n\n" } { print "Types: deb-src\n" $0 }' || true)"
elif [ -f /etc/apt/sources.list ]; then
  want_src="$(sed -n 's/^[[:space:]]*deb[[:space:]]/deb-src /p' /etc/apt/sources.list)"
  SRC_FILE=/etc/apt/sources.list.d/spade-src.list
fi
src_changed=0
if [ -n "$want_src" ] && { [ -f "$SRC_FILE" ] || ! have_src; }; then
  if [ "$(cat "$SRC_FILE" 2>/dev/null)" != "$want_src" ]; then
    echo "setup: adding deb-src entries ($SRC_FILE)"
    printf '%s\n' "$want_src" | $SUDO tee "$SRC_FILE" >/dev/null
    src_changed=1
  fi
fi
if [ "$src_changed" -eq 1 ] || { [ -f "$SRC_FILE" ] && ! ls /var/lib/apt/lists/*_Sources* >/dev/null 2>&1; }; then
  $SUDO apt-get update -qq || echo "setup: warning: apt-get update failed (debian: duel repositories will be skipped)"
fi

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" && continue
  [ -n "${COMMAND_OF[$p]:-}" ] && command -v "${COMMAND_OF[$p]}" >/dev/null 2>&1 && continue
  missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#PACKAGES[@]} packages present"
  exit 0
fi
echo "setup: installing ${missing[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
