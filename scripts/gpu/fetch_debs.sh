#!/usr/bin/env bash
# Run HERE (Debian 12 with its package mirrors), before a GPU session: the GPU machine reaches no
# package registry, so the build's Debian dependencies travel with the working tree.
#   1. .deb files of the -dev packages spade builds against (scripts/setup.sh) and their library
#      dependencies, minus what every Linux with a compiler has (libc, libstdc++, zlib, OpenSSL...);
#   2. the Debian sources of the C++ libraries whose API passes std::string (yaml-cpp, googletest,
#      sentencepiece): PyTorch wheels built with the pre-C++11 string ABI (torch._C._GLIBCXX_USE_CXX11_ABI
#      false) cannot link Debian's binaries of those, so use_debs.sh rebuilds them there with that ABI.
# Output: gpu_debs/ (git-ignored, ~51 MB; the device tool's carry limit is 64 MiB), then e.g.
#   run(command="bash scripts/gpu/run_all.sh", carry=["gpu_debs"], timeout_s=600)  (see run_all.sh)
# STATUS: run here (56 packages, 50 MB); used on an H200 machine on 2026-12-04 (bench/RESULTS.md).
set -euo pipefail
cd "$(dirname "$0")/../.."
OUTDIR=${1:-gpu_debs}
DEV=(libyaml-cpp-dev nlohmann-json3-dev libcli11-dev pybind11-dev libgtest-dev libgmock-dev libsqlite3-dev
     libcurl4-openssl-dev libpcre2-dev libicu-dev libhdf5-dev libsentencepiece-dev libseccomp-dev)
# Present on any build machine, or alternatives of packages we take (libcurl-ssl-dev providers).
SKIP='^(libc6|libc6-dev|libgcc-s1|libstdc\+\+6|gcc-.*|cpp.*|zlib1g|debconf|perl.*|python3.*|dpkg|tar|libcrypt1|libcrypt-dev|linux-libc-dev|libnsl.*|libtirpc.*|rpcsvc-proto|libc-dev-bin|libgomp1|libquadmath.*|libgfortran.*|mpi-default.*|libopenmpi.*|libhwloc.*|openmpi.*|libpmix.*|libevent.*|libfabric.*|libibverbs.*|librdmacm.*|libpsm.*|libucx.*|libnl-.*|libnuma.*|libxnvctrl.*|libx11.*|libxau.*|libxcb.*|libxdmcp.*|libbsd.*|libmd0|x11-common|libxext.*|libxml2.*|liblzma.*|libltdl.*|libudev.*|libsystemd.*|libcap.*|libgcrypt.*|libgpg-error.*|liblz4.*|ocl-icd.*|libjpeg.*|gfortran.*|binutils.*|libbinutils|libctf.*|libgprofng.*|libjansson.*|libasan.*|libatomic.*|libcc1.*|libgcc-.*-dev|libisl.*|libitm.*|liblsan.*|libmpc.*|libmpfr.*|libgmp.*|libtsan.*|libubsan.*|libzstd1|libbrotli1|libssl3|libcurl4-gnutls-dev|libcurl4-nss-dev|libcurl3-nss|libcurl3-gnutls|libnss3|libnspr4|nss-plugin-pem|libhdf5-fortran-102|libhdf5-hl-fortran-100|hdf5-helpers)$'
mkdir -p "$OUTDIR/src"
mapfile -t PKGS < <(apt-cache depends --recurse --no-recommends --no-suggests --no-conflicts --no-breaks \
                      --no-replaces --no-enhances --no-pre-depends "${DEV[@]}" | grep -v '^ \|<' | sort -u | grep -Ev "$SKIP")
echo "fetch_debs: ${#PKGS[@]} packages -> $OUTDIR"
(cd "$OUTDIR" && rm -f ./*.deb && apt-get download "${PKGS[@]}" 2>&1 | grep -v '^W: Download is performed unsandboxed' || true)
(cd "$OUTDIR/src" && rm -rf ./* && apt-get source --download-only yaml-cpp googletest sentencepiece 2>&1 \
   | grep -v '^W: Download is performed unsandboxed' | tail -1)
n=$(ls "$OUTDIR"/*.deb | wc -l)
[ "$n" -eq "${#PKGS[@]}" ] || { echo "fetch_debs: got $n of ${#PKGS[@]} .deb files" >&2; exit 1; }
du -sh "$OUTDIR"
