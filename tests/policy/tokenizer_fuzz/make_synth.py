# Builds synthetic tokenizer.json directories for the differential fuzz test (fuzz.mjs) from the real files
# in data/tokenizers/: Qwen3's and Mistral v0.1's with extra added tokens that overlap and use single_word /
# lstrip / rstrip / special, and Qwen3's with a Split pre-tokenizer whose pattern can match empty strings
# or uses \b. Ids as HF assigns them. Usage: python3 make_synth.py DATA_DIR OUT_DIR
import json, os, sys
R, OUT = sys.argv[1], sys.argv[2]
def tok(id, content, special=False, lstrip=False, rstrip=False, single_word=False, normalized=False):
    return dict(id=id, content=content, single_word=single_word, lstrip=lstrip, rstrip=rstrip,
                normalized=normalized, special=special)
def write(name, base, added=None, mutate=None):
    d = json.load(open(f"{R}/{base}/tokenizer.json"))
    if added is not None:
        start = max(max(t["id"] for t in d["added_tokens"]) + 1, len(d["model"]["vocab"]))
        # ids as HF assigns them (and would serialize them): a content that is a vocabulary word gets that
        # word's id, the others consecutive ids after the largest.
        out = []
        for a in added:
            v = d["model"]["vocab"].get(a[0])
            if v is None: v = start; start += 1
            out.append(tok(v, a[0], **a[1]))
        d["added_tokens"] = d["added_tokens"] + out
    if mutate: mutate(d)
    os.makedirs(f"{OUT}/{name}", exist_ok=True)
    json.dump(d, open(f"{OUT}/{name}/tokenizer.json", "w"), ensure_ascii=False)
S = dict(special=True); SW = dict(single_word=True); L = dict(lstrip=True); Rr = dict(rstrip=True)
def f(**k): return k
single = [("hello", SW), ("hello world", SW), ("lo w", {}), ("<x>", f(single_word=True, special=True)),
          ("<x><y>", S), ("x>", SW), ("42", SW), ("日本", SW), ("ab", SW), ("abc", {}), ("bcd", SW), ("c", SW),
          ("_t", SW), ("é", SW), ("<|im_sta", SW), ("|>", SW), ("ok", f(single_word=True, special=True)),
          ("k!", {}), ("!", SW)]
strip = [("<a>", f(lstrip=True, rstrip=True, special=True)), ("<b>", Rr), ("<c>", L), ("  ", {}), ("\n\n", {}),
         (" <d>", L), ("<e> ", Rr), ("<a><b>", f(special=True, lstrip=True)), ("x<a>", {}),
         ("<im>", f(special=True, rstrip=True, single_word=True)), ("end", f(lstrip=True, rstrip=True, single_word=True)),
         (" z", {}), ("\u00a0<n>", f(rstrip=True)), ("<f>", f(lstrip=True, rstrip=True))]
mixed = [("<|a|>", S), ("<|a", {}), ("a|>", {}), ("<|", S), ("|>", Rr), ("<|a|><|b|>", {}), ("<|b|>", f(special=True, lstrip=True)),
         ("<|b", f(special=True, single_word=True)), ("b|", SW)]
for base in ["qwen3", "mistral_v0_1"]:
    write(f"{base}_single", base, single)
    write(f"{base}_strip", base, strip)
    write(f"{base}_mixed", base, mixed)
    seen = set(); allt = [a for a in single + strip + mixed if not (a[0] in seen or seen.add(a[0]))]
    write(f"{base}_all", base, allt)
# Split pre-tokenizer with patterns that can match empty (commit 26edeba): replace Qwen3's first Split.
pats = {"empty": "", "sstar": "\\s*", "astar": "a*", "lookA": "(?=[A-Z])", "wordb": "\\b", "xopt": "x?", "orig_or_empty": "\\p{N}|"}
for pn, p in pats.items():
    for beh in ["Isolated", "Removed", "MergedWithPrevious", "MergedWithNext", "Contiguous"]:
        for inv in [False, True]:
            def mut(d, p=p, beh=beh, inv=inv):
                d["pre_tokenizer"]["pretokenizers"][0] = {"type": "Split", "pattern": {"Regex": p}, "behavior": beh, "invert": inv}
            write(f"split_{pn}_{beh}_{int(inv)}", "qwen3", mutate=mut)
