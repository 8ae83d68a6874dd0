// Differential fuzz test of spade's tokenizers against Hugging Face's Rust tokenizers (npm
// tokenizers@0.23.2, unpacked by `bash scripts/fetch_tokenizers.sh --reference`): random strings, dense in
// the file's added-token texts and their fragments ("added" mode) or ordinary text ("--text"), encoded by
// both in "parsed" and "plain" mode (as tests/policy/tokenizer_reference.mjs defines them: special tokens
// matched or not) and decoded; each difference is shrunk to a minimal string. The whole run:
// scripts/tokenizer_fuzz.sh.
// Usage: node fuzz.mjs TOKENIZER_STDIO DIR N SEED [--text]
//   TOKENIZER_STDIO: the spade side (build/tests/policy/tokenizer_stdio); DIR holds tokenizer.json.
// Prints a JSON summary; exits 1 if any string differed.
import fs from "node:fs";
import path from "node:path";
import { spawn } from "node:child_process";
import { createRequire } from "node:module";
import readline from "node:readline";

import { fileURLToPath } from "node:url";
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../..");
const nodeDir = process.env.SPADE_TOKENIZER_NODE_DIR ?? path.join(root, ".cache/tokenizers/node");
const { Tokenizer: RustTokenizer } = createRequire(import.meta.url)(path.join(nodeDir, "tokenizers/index.js"));
const [stdioBin, dir, N, SEED] = [process.argv[2], process.argv[3], +process.argv[4], +process.argv[5]];
if (!stdioBin || !dir || !(N >= 0)) {
  console.error("usage: node fuzz.mjs TOKENIZER_STDIO DIR N SEED [--text]");
  process.exit(2);
}
const MODE = process.argv.includes("--text") ? "text" : "added";

// ---- HF, as loadModel in tokenizer_reference.mjs
const text0 = fs.readFileSync(path.join(dir, "tokenizer.json"), "utf8");
const json = JSON.parse(text0);
const inVocab = (t) => json.model.vocab[t.content] === t.id;
const plainJson = { ...json, added_tokens: (json.added_tokens || [])
  .filter((t) => !(t.special && inVocab(t)))
  .map((t) => (t.special ? { ...t, content: `\u0000unmatchable-${t.id}\u0000` } : t)) };
const rust = RustTokenizer.fromString(text0);
const rustPlain = RustTokenizer.fromString(JSON.stringify(plainJson));
const hfIds = async (tok, s) => (s.length === 0 ? [] : (await tok.encode(s, null, { addSpecialTokens: false })).getIds());
const hfDec = async (ids) => (ids.length === 0 ? "" : await rust.decode(ids, false));

// ---- spade child
const child = spawn(stdioBin, [dir], { stdio: ["pipe", "pipe", "inherit"] });
const rl = readline.createInterface({ input: child.stdout });
const waiters = [];
rl.on("line", (l) => waiters.shift()(JSON.parse(l)));
const next = () => new Promise((r) => waiters.push(r));
await next();
const spade = async (s) => { const p = next(); child.stdin.write(JSON.stringify(s) + "\n"); return p; };

// ---- random
let st = SEED >>> 0 || 1;
const rnd = () => { st ^= st << 13; st >>>= 0; st ^= st >>> 17; st ^= st << 5; st >>>= 0; return st / 4294967296; };
const ri = (n) => Math.floor(rnd() * n);
const pick = (a) => a[ri(a.length)];

const added = (json.added_tokens || []).map((t) => t.content);
// Prefer the interesting ones on big sets (gemma3: 6415): specials, non-<unusedN>, plus a random sample.
const core = (json.added_tokens || []).filter((t) => t.special || !/^<unused\d+>$/.test(t.content)).map((t) => t.content);
const pool = core.length > 400 ? core : added;
const neighbours = ["a", "Z", "é", "中", "ß", "1", "9", "_", " ", "  ", "\u00a0", "\n", "\n\n", "\t", "\r\n", "\u3000",
  "\u200d", "\u0301", "\u2028", "\u0085", "!", "-", "'s", "<", ">", "|", "/", "<|", "|>", "</", "[", "]", "x", "é", "\u00a0\u00a0"];
const words = ["Hello", "world", "the quick brown fox", "user", "assistant", "system", "你好", "世界", "こんにちは",
  "Привет", "مرحبا", "नमस्ते", "안녕", "🦙", "👩‍💻", "❤️", "🎉", "Café", "naïve", "def f(x):\n    return x", "1234567",
  "3.14", "I'm", "don't", "  leading", "trailing   ", "[INST]", "[/INST]", "<<SYS>>", "<s>", "</s>", "<unk>", "▁", "\ufeff",
  "<0x0A>", "<think>", "</think>", "<tool_call>", "<|im_start|>", "<|im_end|>", "<|endoftext|>", "<|eot_id|>",
  "<start_of_turn>", "<end_of_turn>", "<bos>", "<eos>", "<pad>", "<mask>", "<unused1>", "<|reserved_special_token_3|>"];
function variant(t) {
  const cps = [...t];
  const k = 1 + ri(Math.max(1, cps.length - 1));
  switch (ri(10)) {
    case 0: return cps.slice(0, k).join("");           // prefix "<|im_sta"
    case 1: return cps.slice(k).join("");              // suffix
    case 2: { const u = pick(pool); return cps.slice(0, k).join("") + [...u].slice(ri([...u].length)).join(""); } // spliced
    case 3: return t + t;                              // repeated
    case 4: return t.toUpperCase();
    case 5: return cps.slice(0, k).join("") + pick(neighbours) + cps.slice(k).join(""); // broken by a char
    default: return t;
  }
}
function gen() {
  const n = 1 + ri(MODE === "text" ? 8 : 12);
  let s = "";
  for (let i = 0; i < n; ++i) {
    const r = rnd();
    if (MODE === "added" && r < 0.45) s += variant(pick(pool));
    else if (r < 0.75) s += pick(neighbours);
    else s += pick(words);
  }
  return s;
}

let lastStats = {};
const addedIds = new Set((json.added_tokens || []).map((t) => t.id));
// ---- compare one string; returns list of differences
async function check(s) {
  const sp = await spade(s);
  const hp = await hfIds(rust, s), hq = await hfIds(rustPlain, s);
  const d = [];
  lastStats = { hasAdded: hp.some((i) => addedIds.has(i)), differs: JSON.stringify(hp) !== JSON.stringify(hq) };
  if (sp.error) return [{ kind: "spade_error", msg: sp.error }];
  if (JSON.stringify(sp.parsed) !== JSON.stringify(hp)) d.push({ kind: "parsed", spade: sp.parsed, hf: hp });
  if (JSON.stringify(sp.plain) !== JSON.stringify(hq)) d.push({ kind: "plain", spade: sp.plain, hf: hq });
  if (d.length === 0) {
    const hd = await hfDec(hp);
    if (sp.dec !== hd) d.push({ kind: "decode", spade: sp.dec, hf: hd });
  }
  return d;
}
// Greedy minimization by code points while a difference of the same kind persists.
async function minimize(s, kind) {
  let cps = [...s];
  const bad = async (c) => (await check(c.join(""))).some((x) => x.kind === kind);
  for (let chunk = Math.max(1, cps.length >> 1); chunk >= 1; chunk = chunk >> 1) {
    for (let i = 0; i < cps.length; ) {
      const c = cps.slice(0, i).concat(cps.slice(i + chunk));
      if (c.length > 0 && (await bad(c))) cps = c; else i += chunk;
    }
  }
  return cps.join("");
}

const fixed = [];
const counts = { strings: 0, parsed: 0, plain: 0, decode: 0 };
const mismatches = new Map();
const total = fixed.length + N;
for (let i = 0; i < total; ++i) {
  const s = i < fixed.length ? fixed[i] : gen();
  const d = await check(s);
  counts.strings++;
  if (lastStats.hasAdded) counts.with_added_id = (counts.with_added_id || 0) + 1;
  if (lastStats.differs) counts.parsed_ne_plain = (counts.parsed_ne_plain || 0) + 1;
  counts.parsed++; counts.plain++;
  if (!d.some((x) => x.kind === "parsed" || x.kind === "plain")) counts.decode++;
  for (const x of d) counts["fail_" + x.kind] = (counts["fail_" + x.kind] || 0) + 1;
  for (const x of d) {
    if (mismatches.size >= 40 && ![...mismatches.values()].every((m) => m.kind !== x.kind)) { continue; }
    const m = await minimize(s, x.kind);
    const key = x.kind + ":" + m;
    if (mismatches.has(key)) { mismatches.get(key).hits++; continue; }
    const again = (await check(m)).find((y) => y.kind === x.kind);
    mismatches.set(key, { kind: x.kind, minimal: m, spade: again?.spade, hf: again?.hf, original: s, hits: 1 });
  }
}
const byKind = {};
for (const m of mismatches.values()) byKind[m.kind] = (byKind[m.kind] || 0) + m.hits;
console.log(JSON.stringify({ dir, mode: MODE, seed: SEED, counts, failing_strings_by_kind: byKind, mismatches: [...mismatches.values()] }, null, 1));
child.stdin.end();
process.exitCode = mismatches.size > 0 ? 1 : 0;
