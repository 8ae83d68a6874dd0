// Byte-level BPE from tokenizer.json (policy/bpe_tokenizer.h) and the Qwen2 / Llama 3 pre-tokenizer
// regexes (policy/regex_split.h). We have no real Qwen2 / Llama 3 tokenizer.json here, so every expected
// id and split below is derived by hand (the derivation is in the comment next to it) from: the GPT-2
// byte alphabet (byte_level.h: printable ASCII maps to itself, ' ' -> 'Ġ' U+0120), the hand-made
// vocabulary and merge ranks of make_json(), and the regex alternatives in order:
//   A1 (?i:'s|'t|'re|'ve|'m|'ll|'d)   A2 [^\r\n\p{L}\p{N}]?\p{L}+   A3 \p{N} (Llama 3: \p{N}{1,3})
//   A4 ' ?[^\s\p{L}\p{N}]+[\r\n]*'    A5 \s*[\r\n]+   A6 \s+(?!\S)   A7 \s+
// (leftmost match; at one position the first alternative that matches wins).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <thread>

#include <nlohmann/json.hpp>

#include "tests/testing/test_util.h"
#include "tests/testing/tiny_bpe.h"
#include "common/error.h"
#include "policy/bpe_tokenizer.h"
#include "policy/byte_level.h"
#include "policy/regex_split.h"
#include "policy/tokenizer.h"

using namespace spade::policy;
namespace fs = std::filesystem;
using nlohmann::json;
using Ids = std::vector<int64_t>;
using Pieces = std::vector<std::string>;

namespace {

std::string tmp_dir(const std::string& name) { return spade::fixtures::fresh_test_dir("policy_bpe", name); }
using spade::fixtures::error_of;

void write(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

// Byte-level spelling of one byte (the vocabulary key of its one-byte piece).
std::string sym(uint8_t b) {
  std::string s;
  byte_level::append_utf8(s, byte_level::byte_to_char(b));
  return s;
}

// The hand-made tokenizer.json. Vocabulary: id b = the piece of byte b (0..255), then the merges below,
// ids 256.. in rank order; ids 268..299 are a gap; added tokens 300..303.
//   rank 0  "Ġ t"    -> "Ġt"     256        rank 6  "1 2"   -> "12"    262
//   rank 1  "h e"    -> "he"     257        rank 7  "a a"   -> "aa"    263
//   rank 2  "Ġt he"  -> "Ġthe"   258        rank 8  "aa aa" -> "aaaa"  264
//   rank 3  "l l"    -> "ll"     259        rank 9  "b c"   -> "bc"    265
//   rank 4  "he ll"  -> "hell"   260        rank 10 "a b"   -> "ab"    266
//   rank 5  "hell o" -> "hello"  261        rank 11 "Ã ©"   -> "Ã©"    267  (é = C3 A9)
// Merges are given in both accepted forms ("a b" strings and [a, b] pairs).
json make_json(const std::string& regex = kQwen2SplitRegex, bool ignore_merges = false,
               const json& normalizer = json{{"type", "NFC"}}) {
  json vocab = json::object();
  for (int b = 0; b < 256; ++b) vocab[sym(static_cast<uint8_t>(b))] = b;
  const std::vector<std::pair<std::string, std::string>> merges = {
      {"Ġ", "t"}, {"h", "e"}, {"Ġt", "he"}, {"l", "l"}, {"he", "ll"}, {"hell", "o"},
      {"1", "2"}, {"a", "a"}, {"aa", "aa"}, {"b", "c"}, {"a", "b"}, {sym(0xC3), sym(0xA9)}};
  json mj = json::array();
  for (size_t r = 0; r < merges.size(); ++r) {
    vocab[merges[r].first + merges[r].second] = 256 + static_cast<int>(r);
    if (r % 2 == 0) mj.push_back(merges[r].first + " " + merges[r].second);
    else mj.push_back(json::array({merges[r].first, merges[r].second}));
  }
  json added = json::array({
      {{"id", 300}, {"content", "<|im_start|>"}, {"special", true}},
      {{"id", 301}, {"content", "<|im_end|>"}, {"special", true}},
      {{"id", 302}, {"content", "<tool>"}, {"special", false}},
      {{"id", 303}, {"content", "<|endoftext|>"}, {"special", true}},
  });
  return {
      {"version", "1.0"},
      {"added_tokens", added},
      {"normalizer", normalizer},
      {"pre_tokenizer",
       {{"type", "Sequence"},
        {"pretokenizers",
         json::array({{{"type", "Split"}, {"pattern", {{"Regex", regex}}}, {"behavior", "Isolated"}, {"invert", false}},
                      {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", false}, {"use_regex", false}}})}}},
      {"post_processor", nullptr},
      {"decoder", {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", true}, {"use_regex", true}}},
      {"model",
       {{"type", "BPE"}, {"dropout", nullptr}, {"unk_token", nullptr}, {"continuing_subword_prefix", nullptr},
        {"end_of_word_suffix", nullptr}, {"fuse_unk", false}, {"byte_fallback", false},
        {"ignore_merges", ignore_merges}, {"vocab", vocab}, {"merges", mj}}},
  };
}

// Writes make_json() as DIR/tokenizer.json and loads it through policy::Tokenizer.
Tokenizer load_hand_made(const std::string& name, const json& j = make_json()) {
  const std::string d = tmp_dir(name);
  write(d + "/tokenizer.json", j.dump());
  return Tokenizer::load(d + "/tokenizer.json");
}

Pieces qwen2_split(const std::string& s) {
  static const RegexSplitter r(kQwen2SplitRegex, SplitBehavior::kIsolated, false, false, "test");
  return r.split(s);
}

}  // namespace

TEST(BpeByteLevel, Gpt2Alphabet) {
  // bytes_to_unicode(): printable bytes map to themselves; the 68 others to U+0100.. in byte order:
  // 0x00 -> U+0100, 0x0A (10th) -> U+010A 'Ċ', ' ' 0x20 (33rd, index 32) -> U+0120 'Ġ',
  // 0x7F (index 33) -> U+0121, 0xAD (the last one, index 67) -> U+0143.
  EXPECT_EQ(byte_level::byte_to_char('A'), U'A');
  EXPECT_EQ(byte_level::byte_to_char(0xE9), U'\u00E9');
  EXPECT_EQ(byte_level::byte_to_char(0x00), U'\u0100');
  EXPECT_EQ(byte_level::byte_to_char('\n'), U'\u010A');
  EXPECT_EQ(byte_level::byte_to_char(' '), U'\u0120');
  EXPECT_EQ(byte_level::byte_to_char(0x7F), U'\u0121');
  EXPECT_EQ(byte_level::byte_to_char(0xAD), U'\u0143');
  std::string all;
  for (int b = 0; b < 256; ++b) all += static_cast<char>(b);
  EXPECT_EQ(byte_level::decode(byte_level::encode(all)), all);
  EXPECT_EQ(byte_level::encode(" hi\n"), "\xC4\xA0hi\xC4\x8A");  // Ġ = C4 A0, Ċ = C4 8A
}

TEST(BpePreTokenizer, Qwen2RegexSplits) {
  // "Hello" by A2; " world" by A2 with the space as its one optional non-letter.
  EXPECT_EQ(qwen2_split("Hello world"), (Pieces{"Hello", " world"}));
  // Contractions: A2 stops at the apostrophe (not \p{L}); A1 takes "'m" / "'ll"; (?i:) makes "'T" match.
  EXPECT_EQ(qwen2_split("I'm"), (Pieces{"I", "'m"}));
  EXPECT_EQ(qwen2_split("we'll"), (Pieces{"we", "'ll"}));
  EXPECT_EQ(qwen2_split("DON'T"), (Pieces{"DON", "'T"}));
  // Digits one by one (A3 = \p{N}); the space before them fits neither A2 (no letter follows), A4 (a digit
  // is in \p{N}) nor A6 ((?!\S) fails before '1'), so A7 takes it alone.
  EXPECT_EQ(qwen2_split("abc 12345"), (Pieces{"abc", " ", "1", "2", "3", "4", "5"}));
  // Arabic-Indic digits are \p{N} too.
  EXPECT_EQ(qwen2_split("\u0663\u0664"), (Pieces{"\u0663", "\u0664"}));
  // Three spaces before a letter: A6 backs off to two spaces (the third is followed by 'b', \S); the last
  // space joins " b" by A2.
  EXPECT_EQ(qwen2_split("a   b"), (Pieces{"a", "  ", " b"}));
  // Trailing spaces: A6 with nothing after.
  EXPECT_EQ(qwen2_split("a  "), (Pieces{"a", "  "}));
  // Newlines: A5 (\s*[\r\n]+) takes the whole run "\n\n".
  EXPECT_EQ(qwen2_split("x\n\ny"), (Pieces{"x", "\n\n", "y"}));
  // Punctuation keeps its trailing newline (A4's [\r\n]*); indentation then splits like "a   b".
  EXPECT_EQ(qwen2_split("foo:\n  bar"), (Pieces{"foo", ":\n", " ", " bar"}));
  EXPECT_EQ(qwen2_split("x=1;\n"), (Pieces{"x", "=", "1", ";\n"}));
  // One non-letter, non-digit prefix joins the letters (A2), unlike GPT-2's regex.
  EXPECT_EQ(qwen2_split("(abc"), (Pieces{"(abc"}));
  // CJK ideographs are \p{Lo}: one A2 run, with the space prefix.
  EXPECT_EQ(qwen2_split("\u4F60\u597D\u4E16\u754C"), (Pieces{"\u4F60\u597D\u4E16\u754C"}));
  EXPECT_EQ(qwen2_split("Hi \u4F60\u597D"), (Pieces{"Hi", " \u4F60\u597D"}));
  // Emoji are \p{So}: A4 takes " " + the run of non-space non-letter non-digit symbols, '!' included.
  EXPECT_EQ(qwen2_split("ok \U0001F44D\U0001F44D!"), (Pieces{"ok", " \U0001F44D\U0001F44D!"}));
  // Accented Latin letters are \p{L} (the regex sees code points, not bytes).
  EXPECT_EQ(qwen2_split("Gr\u00FC\u00DFe"), (Pieces{"Gr\u00FC\u00DFe"}));
}

TEST(BpePreTokenizer, Llama3AndGpt2Regexes) {
  const RegexSplitter llama3(kLlama3SplitRegex, SplitBehavior::kIsolated, false, false, "test");
  // \p{N}{1,3}: greedy runs of three digits, then the rest.
  EXPECT_EQ(llama3.split("12345"), (Pieces{"123", "45"}));
  EXPECT_EQ(llama3.split("x 1234567"), (Pieces{"x", " ", "123", "456", "7"}));
  const RegexSplitter gpt2(kGpt2SplitRegex, SplitBehavior::kIsolated, false, false, "test");
  // GPT-2: " ?\p{N}+" keeps the space and the whole digit run; "(" is split from the letters.
  EXPECT_EQ(gpt2.split("(abc 12345"), (Pieces{"(", "abc", " 12345"}));
}

TEST(BpePreTokenizer, SplitBehaviors) {
  // Pattern "-" on "a-b--c": three one-character matches at 1, 3, 4 (adjacent matches stay separate).
  // Expected pieces follow the example in HF tokenizers' SplitDelimiterBehavior docs ("the-final--countdown":
  // MergedWithPrevious -> "the-" "final-" "-" "countdown", MergedWithNext -> "the" "-final" "-" "-countdown",
  // Contiguous -> "the" "-" "final" "--" "countdown"): a match merges only into a neighbouring non-match.
  auto split = [](SplitBehavior b, bool invert) {
    return RegexSplitter("-", b, invert, /*literal=*/true, "test").split("a-b--c");
  };
  EXPECT_EQ(split(SplitBehavior::kIsolated, false), (Pieces{"a", "-", "b", "-", "-", "c"}));
  EXPECT_EQ(split(SplitBehavior::kRemoved, false), (Pieces{"a", "b", "c"}));
  EXPECT_EQ(split(SplitBehavior::kMergedWithPrevious, false), (Pieces{"a-", "b-", "-", "c"}));
  EXPECT_EQ(split(SplitBehavior::kMergedWithNext, false), (Pieces{"a", "-b", "-", "-c"}));
  EXPECT_EQ(split(SplitBehavior::kContiguous, false), (Pieces{"a", "-", "b", "--", "c"}));
  // invert: the letters become the "matches" and Removed drops them; the three "-" spans stay separate.
  EXPECT_EQ(split(SplitBehavior::kRemoved, true), (Pieces{"-", "-", "-"}));
  EXPECT_NE(error_of([] { RegexSplitter("(", SplitBehavior::kIsolated, false, false, "f.json: pre_tokenizer"); })
                .find("f.json: pre_tokenizer: pattern does not compile"),
            std::string::npos);
}

TEST(BpePreTokenizer, EmptyMatchesFollowOnigIteration) {
  // HF's Split runs the onig crate's find_iter (tokenizers' SysRegex; pattern.rs turns the matches and
  // the gaps between them into pieces): an empty match is accepted unless it ends where the previous
  // match ended, then the search moves on one character. Pieces derived by hand from that rule.
  // An empty pattern matches at every character boundary: every character becomes a piece.
  EXPECT_EQ(RegexSplitter("", SplitBehavior::kIsolated, false, /*literal=*/true, "test").split("h\u00E9llo"),
            (Pieces{"h", "\u00E9", "l", "l", "o"}));
  // "x*" on "abxxc": matches (0,0) (1,1) (2,4) (5,5); the empty one at 4 ends where "xx" ended and is
  // skipped. Gaps "a" "b" "c". (Skipping every empty match would give "ab" "xx" "c".)
  auto split = [](SplitBehavior b) { return RegexSplitter("x*", b, false, false, "test").split("abxxc"); };
  EXPECT_EQ(split(SplitBehavior::kIsolated), (Pieces{"a", "b", "xx", "c"}));
  EXPECT_EQ(split(SplitBehavior::kContiguous), (Pieces{"a", "b", "xx", "c"}));
  EXPECT_EQ(split(SplitBehavior::kRemoved), (Pieces{"a", "b", "c"}));
  // MergedWithPrevious: the empty matches merge into "a" and "c" (no change), "xx" into "b".
  EXPECT_EQ(split(SplitBehavior::kMergedWithPrevious), (Pieces{"a", "bxx", "c"}));
  // Empty text: no pieces.
  EXPECT_TRUE(RegexSplitter("", SplitBehavior::kIsolated, false, true, "test").split("").empty());
}

TEST(BpeTokenizer, AddedTokensDecodeThroughTheByteLevelAlphabet) {
  // HF tokenizers 0.23.2 (Node binding, probed by a review helper) decodes added tokens through the
  // ByteLevel decoder like every other token: "Ġx>" -> " x>" ('Ġ' is the alphabet's spelling of ' '),
  // "‹é>" -> "‹" + byte 0xE9 + ">" ('é' is the alphabet's spelling of byte 0xE9; '‹' is outside the
  // alphabet and kept; HF then shows the lone byte as U+FFFD, spade returns raw bytes).
  const std::string d = spade::fixtures::fresh_test_dir("policy_bpe", "added_decode");
  const Tokenizer t = Tokenizer::load(spade::fixtures::write_tiny_bpe(d, {"\u0120x>", "\u2039\u00E9>"}));
  const int64_t first = t.token_id("\u0120x>");
  EXPECT_EQ(t.decode({first}), " x>");
  EXPECT_EQ(t.decode({first + 1}), "\u2039\xE9>");
  EXPECT_EQ(t.decode({first, 104, 105}), " x>hi");
}

TEST(BpeTokenizer, HandDerivedIds) {
  Tokenizer t = load_hand_made("ids");
  EXPECT_EQ(t.kind(), "bpe");
  // "hello": h e l l o -> rank 1 (he) -> rank 3 (ll) -> rank 4 (hell) -> rank 5 (hello) = 261.
  EXPECT_EQ(t.encode("hello"), (Ids{261}));
  // " the": Ġ t h e -> rank 0 (Ġt) -> rank 1 (he) -> rank 2 (Ġthe) = 258. Pre-tokens "hello", " the".
  EXPECT_EQ(t.encode("hello the"), (Ids{261, 258}));
  // Qwen2 regex splits digits, so merge "1 2" never applies: ids are the byte values '1' '2' '3'.
  EXPECT_EQ(t.encode("123"), (Ids{49, 50, 51}));
  // Rank decides, not position: "b c" (rank 9) beats "a b" (rank 10): a + bc.
  EXPECT_EQ(t.encode("abc"), (Ids{97, 265}));
  // Equal ranks merge leftmost first: aaaaa -> aa a a a -> aa aa a -> (rank 8) aaaa a.
  EXPECT_EQ(t.encode("aaaaa"), (Ids{264, 97}));
  // é is bytes C3 A9 -> merge rank 11 = 267; c a f are 99 97 102.
  EXPECT_EQ(t.encode("caf\u00E9"), (Ids{99, 97, 102, 267}));
  // A space alone (A7) and a newline (A5) are one byte each: 32 and 10.
  EXPECT_EQ(t.encode("a \n"), (Ids{97, 32, 10}));
  EXPECT_EQ(t.decode({261, 258}), "hello the");
  EXPECT_EQ(t.token_id("<|im_end|>"), 301);
  EXPECT_EQ(t.token_id("\xC4\xA0the"), 258);  // "Ġthe"
  EXPECT_EQ(t.piece(258), "\xC4\xA0the");
  EXPECT_EQ(t.piece(300), "<|im_start|>");
  EXPECT_EQ(t.vocab_size(), 304);  // largest id 303 (<|endoftext|>)
  EXPECT_NE(error_of([&] { t.token_id("nope"); }).find("'nope' is not in the vocabulary"), std::string::npos);
  // 280 lies in the gap 268..299; -1 and 304 are outside.
  for (int64_t bad : {280, -1, 304}) EXPECT_NE(error_of([&] { t.decode({bad}); }), "") << bad;
}

TEST(BpeTokenizer, NfcNormalizer) {
  // "e" + U+0301 COMBINING ACUTE (65 CC 81) is NFC "é" (C3 A9) -> merge rank 11 = 267.
  Tokenizer nfc = load_hand_made("nfc");
  EXPECT_EQ(nfc.encode("e\u0301"), (Ids{267}));
  // Without a normalizer the three bytes stay: ids 0x65 0xCC 0x81 = 101 204 129.
  Tokenizer raw = load_hand_made("nonorm", make_json(kQwen2SplitRegex, false, nullptr));
  EXPECT_EQ(raw.encode("e\u0301"), (Ids{101, 204, 129}));
}

TEST(BpeTokenizer, Llama3RegexAndIgnoreMerges) {
  // Llama 3's \p{N}{1,3}: "12345" -> "123" "45"; "123" -> 12 (rank 6) + 3 = 262, 51; "45" = 52, 53.
  Tokenizer l3 = load_hand_made("l3", make_json(kLlama3SplitRegex, false, nullptr));
  EXPECT_EQ(l3.encode("12345"), (Ids{262, 51, 52, 53}));
  // ignore_merges: a pre-token that is itself a vocabulary piece is taken whole. Add "Ġworld" = 268 with no
  // merge leading to it: " world" is then 268 only with ignore_merges; otherwise its bytes
  // Ġ w o r l d = 32 119 111 114 108 100 (no merge applies: "Ġ t" needs a 't').
  json j = make_json(kLlama3SplitRegex, true, nullptr);
  j["model"]["vocab"]["\xC4\xA0world"] = 268;
  Tokenizer ign = load_hand_made("ign", j);
  EXPECT_EQ(ign.encode("hello world"), (Ids{261, 268}));
  j["model"]["ignore_merges"] = false;
  Tokenizer noign = load_hand_made("noign", j);
  EXPECT_EQ(noign.encode("hello world"), (Ids{261, 32, 119, 111, 114, 108, 100}));
}

TEST(BpeTokenizer, SpecialAndAddedTokens) {
  Tokenizer t = load_hand_made("special");
  const std::string chat = "<|im_start|>hello<|im_end|>";
  EXPECT_EQ(t.encode(chat, /*parse_special=*/true), (Ids{300, 261, 301}));
  // parse_special=false: the text is ordinary text. Pre-tokens (Qwen2 regex): "<|" (A4 stops at 'i'), "im"
  // (A2), "_start" (A2: '_' is the optional prefix), "|>" (A4), "hello", "<|", "im", "_end", "|>".
  // Bytes: '<'60 '|'124 'i'105 'm'109 '_'95 's'115 't'116 'a'97 'r'114 '>'62 'e'101 'n'110 'd'100;
  // no merge applies except hello = 261.
  const Ids plain = {60, 124, 105, 109, 95, 115, 116, 97, 114, 116, 124, 62, 261,
                     60, 124, 105, 109, 95, 101, 110, 100, 124, 62};
  EXPECT_EQ(t.encode(chat), plain);
  EXPECT_EQ(t.decode(plain), chat);
  // A non-special added token is matched either way (HF behaviour).
  EXPECT_EQ(t.encode("a<tool>b"), (Ids{97, 302, 98}));
  EXPECT_EQ(t.encode("a<tool>b", true), (Ids{97, 302, 98}));
  // Leftmost match first; special tokens next to text and to each other.
  EXPECT_EQ(t.encode("<|endoftext|><|im_end|>abc", true), (Ids{303, 301, 97, 265}));
  EXPECT_EQ(t.decode({300, 261, 302}), "<|im_start|>hello<tool>");
}

TEST(BpeTokenizer, AddedTokenStripAndSingleWord) {
  json j = make_json();
  j["added_tokens"].push_back({{"id", 304}, {"content", "<s>"}, {"special", true}, {"lstrip", true}, {"rstrip", true}});
  j["added_tokens"].push_back({{"id", 305}, {"content", "cat"}, {"special", false}, {"single_word", true}});
  Tokenizer t = load_hand_made("strip", j);
  // lstrip/rstrip absorb the spaces around "<s>": "a", <s>, "b".
  EXPECT_EQ(t.encode("a  <s> b", true), (Ids{97, 304, 98}));
  // single_word: "cat" alone is 305; inside "cats" it is ordinary text c a t s = 99 97 116 115.
  EXPECT_EQ(t.encode("cat"), (Ids{305}));
  EXPECT_EQ(t.encode("cats"), (Ids{99, 97, 116, 115}));
}

TEST(BpeTokenizer, RoundTrips) {
  Tokenizer t = load_hand_made("rt");
  const std::vector<std::string> texts = {
      // multilingual (already NFC)
      "Gr\u00FC\u00DFe, \u4E16\u754C! \u041F\u0440\u0438\u0432\u0435\u0442 \u043C\u0438\u0440. "
      "\u0645\u0631\u062D\u0628\u0627 \U0001F44B\U0001F3FD \u00C0\u00C9\u00CE \u3053\u3093\u306B\u3061\u306F",
      // code: tabs, CRLF, indentation, operators
      "def f(x):\n\tif x >= 10:\n        return x**2  # ok\r\n\n\n    pass\n",
      // digits
      "3.14159 2026-11-30 1e-9 \u0663\u0664\u0665 000123",
      // invalid UTF-8 bytes (lone continuation, truncated sequence, 0xFF) and NUL
      std::string("\xff\xfe\x80 a\xc3(", 7) + std::string("\0z", 2) + "\xe4\xb8",
      // specials as text, and nothing
      "<|im_end|> <tool>", "", " ", "\n",
  };
  for (const std::string& s : texts) {
    EXPECT_EQ(t.decode(t.encode(s)), s) << s;
    EXPECT_EQ(t.decode(t.encode(s, true)), s) << s;
  }
  // The pre-tokenizer itself loses nothing (pieces concatenate back to the text).
  auto bpe = BpeTokenizer::from_json_text(make_json().dump(), "mem");
  for (const std::string& s : texts) {
    std::string joined;
    for (const auto& p : bpe->pre_tokenize(s)) joined += p;
    EXPECT_EQ(joined, s);
  }
  // A long word merges fast (heap, not rescans): 20000 'a' -> 5000 x "aaaa" (264).
  EXPECT_EQ(t.encode(std::string(20000, 'a')), Ids(5000, 264));
}

TEST(BpeTokenizer, ConcurrentEncodeMatchesSerial) {
  // encode() is const and shares the compiled PCRE2 pattern across threads (match data is per call):
  // four threads must each get the single-threaded result.
  Tokenizer t = load_hand_made("threads");
  std::string text;
  for (int i = 0; i < 200; ++i) text += "hello the caf\u00E9 <|im_end|> 12 aaaaa \u4E16\u754C\n";
  const Ids expected = t.encode(text, true);
  std::vector<Ids> got(4);
  std::vector<std::thread> threads;
  for (int k = 0; k < 4; ++k)
    threads.emplace_back([&, k] {
      for (int r = 0; r < 20; ++r) got[k] = t.encode(text, true);
    });
  for (auto& th : threads) th.join();
  for (const Ids& g : got) EXPECT_EQ(g, expected);
}

TEST(BpeTokenizer, SpecialIdsFromConfigFiles) {
  const std::string d = tmp_dir("cfg");
  write(d + "/tokenizer.json", make_json().dump());
  // No config files: no special ids.
  EXPECT_EQ(Tokenizer::load(d + "/tokenizer.json").eos_id(), -1);
  // tokenizer_config.json: eos as a string, pad as an object, bos null -> bos from config.json (list: first).
  write(d + "/tokenizer_config.json",
        R"({"bos_token": null, "eos_token": "<|im_end|>", "pad_token": {"content": "<|endoftext|>"}})");
  write(d + "/config.json", R"({"bos_token_id": [303, 1], "eos_token_id": 7, "pad_token_id": 8})");
  Tokenizer t = Tokenizer::load_dir(d);
  EXPECT_EQ(t.bos_id(), 303);
  EXPECT_EQ(t.eos_id(), 301);
  EXPECT_EQ(t.pad_id(), 303);
  write(d + "/tokenizer_config.json", R"({"eos_token": "<|nope|>"})");
  EXPECT_NE(error_of([&] { Tokenizer::load_dir(d); }).find("tokenizer_config.json: \"eos_token\" '<|nope|>'"),
            std::string::npos);
}

TEST(BpeTokenizer, LoadDirPrefersTokenizerJson) {
  const std::string d = tmp_dir("dir");
  EXPECT_EQ(Tokenizer::file_in_dir(d), "");
  EXPECT_NE(error_of([&] { Tokenizer::load_dir(d); }).find("no tokenizer.json or tokenizer.model"), std::string::npos);
  write(d + "/tokenizer.model", "not read");
  EXPECT_EQ(Tokenizer::file_in_dir(d), d + "/tokenizer.model");
  write(d + "/tokenizer.json", make_json().dump());
  EXPECT_EQ(Tokenizer::file_in_dir(d), d + "/tokenizer.json");
  EXPECT_EQ(Tokenizer::load_dir(d).kind(), "bpe");
  Tokenizer empty;
  EXPECT_NE(error_of([&] { empty.encode("x"); }).find("no model loaded"), std::string::npos);
}

TEST(BpeTokenizer, ErrorsNameFileAndField) {
  auto err = [](const json& j) { return error_of([&] { BpeTokenizer::from_json_text(j.dump(), "T.json"); }); };
  auto has = [](const std::string& msg, const std::string& part) {
    return msg.find(part) != std::string::npos ? ::testing::AssertionSuccess()
                                               : ::testing::AssertionFailure() << "'" << msg << "' lacks '" << part << "'";
  };
  EXPECT_TRUE(has(error_of([] { BpeTokenizer::from_json_text("{\"model\": ", "T.json"); }), "T.json: invalid JSON"));
  json j = make_json();
  j["model"]["type"] = "WordPiece";
  EXPECT_TRUE(has(err(j), "T.json: model.type \"WordPiece\" is not supported"));
  j = make_json();
  j["model"].erase("merges");
  EXPECT_TRUE(has(err(j), "T.json: missing array model.merges"));
  j = make_json();
  j["model"]["merges"].push_back("zz y");
  EXPECT_TRUE(has(err(j), "model.merges[12] ('zz y'): 'zz' is not in model.vocab"));
  j = make_json();
  j["model"]["merges"].push_back(json::array({1, 2}));
  EXPECT_TRUE(has(err(j), "T.json: model.merges[12]: expected"));
  j = make_json();
  j["normalizer"] = {{"type", "Lowercase"}};
  EXPECT_TRUE(has(err(j), "T.json: normalizer: unsupported normalizer 'Lowercase'"));
  j = make_json();
  j["pre_tokenizer"] = {{"type", "Metaspace"}};
  EXPECT_TRUE(has(err(j), "T.json: pre_tokenizer: pre-tokenizer type 'Metaspace' is not supported"));
  j = make_json();
  j["pre_tokenizer"]["pretokenizers"].erase(1);
  EXPECT_TRUE(has(err(j), "no ByteLevel step"));
  j = make_json();
  j["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = "[a-";
  EXPECT_TRUE(has(err(j), "T.json: pre_tokenizer.pretokenizers[0].pattern: pattern does not compile"));
  j = make_json();
  j["model"]["byte_fallback"] = true;
  EXPECT_TRUE(has(err(j), "model.byte_fallback"));
  j = make_json();
  j["added_tokens"].push_back({{"content", "<x>"}});
  EXPECT_TRUE(has(err(j), "T.json: added_tokens[4]: missing non-negative integer \"id\""));
  j = make_json();
  j["decoder"] = {{"type", "WordPiece"}};
  EXPECT_TRUE(has(err(j), "T.json: decoder"));
  EXPECT_TRUE(has(error_of([] { Tokenizer::load("/nonexistent/tokenizer.json"); }), "/nonexistent/tokenizer.json"));
}
