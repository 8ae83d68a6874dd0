#!/usr/bin/env bash
# Installs every Debian package spade needs (idempotent). Debian 12; run as root (or with sudo).
set -euo pipefail

PACKAGES=(
  build-essential cmake ninja-build ccache pkg-config git
  libtorch-dev libopenblas0-pthread          # LibTorch 1.13 (CPU); OpenBLAS: ~10x faster matmul (NOTES.md)
  libsentencepiece-dev                       # tokenizer training and encoding
  pybind11-dev python3-dev python3-numpy     # spade-envd embeds CPython
  python3-sympy                              # corpus: mathematics and physics documentation
  python3-pytest                             # SWE-Duel: pytest adapter and the pyfix fixture repository
  python3-torch                              # policy parity reference + sampler bench baseline (tests/policy, bench/)
  bubblewrap libseccomp-dev                  # sandbox layers
  libhdf5-dev libcurl4-openssl-dev libsqlite3-dev libgloo-dev
  python3-h5py                               # tests/trainer reads rollouts.h5 back
  libyaml-cpp-dev nlohmann-json3-dev libcli11-dev
  libgtest-dev libgmock-dev
)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#PACKAGES[@]} packages present"
  exit 0
fi
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
echo "setup: installing ${missing[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
