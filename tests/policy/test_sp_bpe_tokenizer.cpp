// SentencePiece-style BPE from tokenizer.json (policy/sp_bpe_tokenizer.h, sp_bpe_model.h, sp_decoder.h):
// the form HF's LlamaConverter writes for Llama 2 / Mistral / TinyLlama (and GemmaConverter for Gemma).
// Every expected id below is derived by hand in the comment next to it from the hand-made vocabulary and
// merge ranks of make_json() and HF tokenizers' rules (the file comments of those headers):
//   vocabulary:  0 <unk>  1 <s>  2 </s>  3 <0xC3>  4 <0xA9>  5 <0x0A>  6 <0xE2>  7 <0x82>  8 <0xAC>
//                9 ▁  10 a  11 b  12 c  13 ▁a  14 ab  15 bc  16 ▁ab  17 abc  18 ▁abc  19 c▁
//   merges by rank: r0 "a b"  r1 "▁ a"  r2 "b c"  r3 "▁a b"  r4 "ab c"  r5 "▁ab c"  r6 "c ▁"
// ("é" = C3 A9 and "€" = E2 82 AC have all their byte pieces; "ü" = C3 BC lacks <0xBC>; '<' '>' 's' ' '
// have neither a piece nor a byte piece.) The same files through HF's Rust tokenizers (npm
// tokenizers@0.23.2; with r3 spelled "▁a b" like the others, as HF wants one form for all merges) give the
// same ids and texts for every encode/decode below (checked when this test was written; the HF quirks
// below, unk runs across byte-fallback characters and Metaspace decoding, were found that way).
#include <gtest/gtest.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "policy/sp_bpe_tokenizer.h"
#include "policy/tokenizer.h"
#include "tests/testing/test_util.h"

using namespace spade::policy;
using nlohmann::json;
using Ids = std::vector<int64_t>;
using Words = std::vector<std::string>;

namespace {

std::string tmp_dir(const std::string& name) { return spade::fixtures::fresh_test_dir("policy_sp_bpe", name); }
using spade::fixtures::error_of;

void write(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

// Llama 2 / Mistral v0.1 (legacy): normalizer Prepend("▁") then Replace(" " -> "▁"), no pre-tokenizer.
json legacy_normalizer() {
  return {{"type", "Sequence"},
          {"normalizers",
           json::array({{{"type", "Prepend"}, {"prepend", "\u2581"}},
                        {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", "\u2581"}}})}};
}
json legacy_decoder() {
  return {{"type", "Sequence"},
          {"decoders",
           json::array({{{"type", "Replace"}, {"pattern", {{"String", "\u2581"}}}, {"content", " "}},
                        {{"type", "ByteFallback"}},
                        {{"type", "Fuse"}},
                        {{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}}})}};
}
json metaspace(const std::string& scheme, bool split) {
  return {{"type", "Metaspace"}, {"replacement", "\u2581"}, {"prepend_scheme", scheme}, {"split", split}};
}

json make_json(bool byte_fallback = true, bool fuse_unk = true) {
  json vocab = {{"<unk>", 0}, {"<s>", 1}, {"</s>", 2}, {"<0xC3>", 3}, {"<0xA9>", 4}, {"<0x0A>", 5},
                {"<0xE2>", 6}, {"<0x82>", 7}, {"<0xAC>", 8}, {"\u2581", 9}, {"a", 10}, {"b", 11},
                {"c", 12}, {"\u2581a", 13}, {"ab", 14}, {"bc", 15}, {"\u2581ab", 16}, {"abc", 17},
                {"\u2581abc", 18}, {"c\u2581", 19}};
  json merges = json::array({"a b", "\u2581 a", "b c", json::array({"\u2581a", "b"}), "ab c", "\u2581ab c", "c \u2581"});
  json added = json::array();
  for (auto [id, content] : {std::pair<int, const char*>{0, "<unk>"}, {1, "<s>"}, {2, "</s>"}})
    added.push_back({{"id", id}, {"content", content}, {"single_word", false}, {"lstrip", false},
                     {"rstrip", false}, {"normalized", false}, {"special", true}});
  return {{"version", "1.0"},
          {"truncation", nullptr},
          {"padding", nullptr},
          {"added_tokens", added},
          {"normalizer", legacy_normalizer()},
          {"pre_tokenizer", nullptr},
          {"post_processor", nullptr},
          {"decoder", legacy_decoder()},
          {"model",
           {{"type", "BPE"}, {"dropout", nullptr}, {"unk_token", "<unk>"}, {"continuing_subword_prefix", nullptr},
            {"end_of_word_suffix", nullptr}, {"fuse_unk", fuse_unk}, {"byte_fallback", byte_fallback},
            {"vocab", vocab}, {"merges", merges}}}};
}

std::unique_ptr<SpBpeTokenizer> make(const json& j) { return SpBpeTokenizer::from_json(j, "T.json"); }

// A json with the Metaspace pre-tokenizer (and decoder) instead of the legacy normalizer.
json with_metaspace(const std::string& scheme, bool split) {
  json j = make_json();
  j["normalizer"] = nullptr;
  j["pre_tokenizer"] = metaspace(scheme, split);
  j["decoder"] = metaspace(scheme, split);
  return j;
}

::testing::AssertionResult has(const std::string& msg, const std::string& part) {
  return msg.find(part) != std::string::npos ? ::testing::AssertionSuccess()
                                             : ::testing::AssertionFailure() << "'" << msg << "' lacks '" << part << "'";
}

}  // namespace

// Merges apply by rank over the whole normalized text, not left to right.
TEST(SpBpeTokenizer, MergesByRank) {
  auto t = make(make_json());
  // "abc" -> "▁abc" = ▁ a b c; pairs (▁,a) r1, (a,b) r0, (b,c) r2: r0 first -> ▁ ab c; (▁,ab) has no
  // merge, (ab,c) r4 -> ▁ abc; (▁,abc) none. [9, 17] -- left to right (r1 first) would have given ▁abc 18.
  EXPECT_EQ(t->encode("abc", true), (Ids{9, 17}));
  // "bc a" -> "▁bc▁a" = ▁ b c ▁ a: r1 (▁,a) at the end before r2 (b,c); then (c,▁a) has no merge, and r6
  // (c,▁) is gone with that ▁: [9, 15, 13].
  EXPECT_EQ(t->encode("bc a", true), (Ids{9, 15, 13}));
  // "c c" -> "▁c▁c" = ▁ c ▁ c: only r6 (c,▁) applies: ▁ c▁ c = [9, 19, 12] (no pre-tokenizer: merges cross
  // the space).
  EXPECT_EQ(t->encode("c c", true), (Ids{9, 19, 12}));
  // " ab": Replace gives "▁ab", Prepend another: ▁ ▁ a b -> r0 -> ▁ ▁ ab: [9, 9, 14].
  EXPECT_EQ(t->encode(" ab", true), (Ids{9, 9, 14}));
  EXPECT_EQ(t->encode("", true), Ids{});
  EXPECT_EQ(t->model().model().num_merges(), 7u);
}

// A character without a piece becomes the byte pieces of its UTF-8 bytes, or unk (fused) without them.
TEST(SpBpeTokenizer, ByteFallbackAndUnk) {
  auto t = make(make_json());
  // "é" = C3 A9: not a piece, both byte pieces exist: ▁ <0xC3> <0xA9> = [9, 3, 4].
  EXPECT_EQ(t->encode("\u00e9", true), (Ids{9, 3, 4}));
  // "€" = E2 82 AC: [9, 6, 7, 8]; a newline is its byte piece <0x0A> = 5: "a\n" -> ▁ a <0x0A> -> r1 -> [13, 5].
  EXPECT_EQ(t->encode("\u20ac", true), (Ids{9, 6, 7, 8}));
  EXPECT_EQ(t->encode("a\n", true), (Ids{13, 5}));
  // "ü" = C3 BC: <0xBC> is missing, so the whole character is unk; two in a row fuse into one unk.
  EXPECT_EQ(t->encode("\u00fc", true), (Ids{9, 0}));
  EXPECT_EQ(t->encode("\u00fc\u00fca", true), (Ids{9, 0, 10}));
  // HF quirk kept: a byte-fallback character does not end a run of unknowns; the pending unk is added at
  // the next piece: "üéüa" -> ▁, (ü unk pending), <0xC3> <0xA9>, (ü fused), then unk before a: [9, 3, 4, 0, 10].
  EXPECT_EQ(t->encode("\u00fc\u00e9\u00fca", true), (Ids{9, 3, 4, 0, 10}));
  // fuse_unk false: one unk per unknown character.
  EXPECT_EQ(make(make_json(true, false))->encode("\u00fc\u00fca", true), (Ids{9, 0, 0, 10}));
  // byte_fallback false: "é" is unk too, fused with the ü after it: [9, 0]; then "ab" -> r0: [9, 0, 14].
  EXPECT_EQ(make(make_json(false, true))->encode("\u00e9\u00fcab", true), (Ids{9, 0, 14}));
  // No unk_token and no piece: HF drops the character: "üa" -> ▁ a -> r1 -> [13].
  json j = make_json(false, true);
  j["model"]["unk_token"] = nullptr;
  EXPECT_EQ(make(j)->encode("\u00fca", true), (Ids{13}));
}

// Added tokens are cut out first; each other segment gets the normalizer (so its own "▁" prefix).
TEST(SpBpeTokenizer, SpecialTokens) {
  auto t = make(make_json());
  // "<s>ab</s>": <s> 1, "ab" -> ▁ab -> r0 -> [9, 14], </s> 2.
  EXPECT_EQ(t->encode("<s>ab</s>", true), (Ids{1, 9, 14, 2}));
  // Not parsed: "<s>ab" -> "▁<s>ab": '<', 's', '>' have no piece and no byte piece: one fused unk: [9, 0, 14].
  EXPECT_EQ(t->encode("<s>ab", false), (Ids{9, 0, 14}));
  EXPECT_EQ(t->token_id("<s>"), 1);
  EXPECT_EQ(t->token_id("\u2581ab"), 16);
  EXPECT_EQ(t->piece(18), "\u2581abc");
  EXPECT_EQ(t->vocab_size(), 20);
  EXPECT_TRUE(has(error_of([&] { t->token_id("zz"); }), "'zz' is not in the vocabulary"));
  EXPECT_TRUE(has(error_of([&] { t->piece(20); }), "id 20 is not a token of T.json"));
}

// The Metaspace pre-tokenizer (newer conversions) instead of Prepend + Replace.
TEST(SpBpeTokenizer, MetaspaceVariants) {
  // always, split: "ab a" -> "ab▁a" -> "▁ab▁a" -> words "▁ab" "▁a": ▁ a b -> r0 -> [9, 14]; ▁ a -> [13].
  EXPECT_EQ(make(with_metaspace("always", true))->encode("ab a", true), (Ids{9, 14, 13}));
  // " ab" -> "▁ab" already starts with ▁: nothing prepended: [9, 14] (the legacy normalizer gives [9, 9, 14]).
  EXPECT_EQ(make(with_metaspace("always", true))->encode(" ab", true), (Ids{9, 14}));
  // split vs not: "c c" -> "▁c▁c"; split: "▁c" "▁c" -> [9, 12, 9, 12]; whole: r6 -> ▁ c▁ c = [9, 19, 12].
  EXPECT_EQ(make(with_metaspace("always", true))->encode("c c", true), (Ids{9, 12, 9, 12}));
  EXPECT_EQ(make(with_metaspace("always", false))->encode("c c", true), (Ids{9, 19, 12}));
  // After an added token: "always" prepends to every segment, "first" only to the one starting the text.
  EXPECT_EQ(make(with_metaspace("always", true))->encode("<s>ab", true), (Ids{1, 9, 14}));
  EXPECT_EQ(make(with_metaspace("first", true))->encode("<s>ab", true), (Ids{1, 14}));
  EXPECT_EQ(make(with_metaspace("first", true))->encode("ab<s>ab", true), (Ids{9, 14, 1, 14}));
  // never: "ab a" -> "ab▁a" -> "ab" "▁a" = [14, 13].
  EXPECT_EQ(make(with_metaspace("never", true))->encode("ab a", true), (Ids{14, 13}));
  // Older files: add_prefix_space true = always (and split defaults to true).
  json j = make_json();
  j["normalizer"] = nullptr;
  j["pre_tokenizer"] = {{"type", "Metaspace"}, {"replacement", "\u2581"}, {"add_prefix_space", true}};
  EXPECT_EQ(make(j)->encode("ab a", true), (Ids{9, 14, 13}));
  EXPECT_EQ(make(with_metaspace("always", true))->pre_tokenize("a  b", true), (Words{"\u2581a", "\u2581", "\u2581b"}));
}

// Gemma style: Replace " " -> "▁" only (no Prepend), a Split pre-tokenizer, and a decoder without Strip.
TEST(SpBpeTokenizer, GemmaStyleReplaceAndSplit) {
  json j = make_json();
  j["normalizer"] = {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", "\u2581"}};
  j["decoder"] = {{"type", "Sequence"},
                  {"decoders", json::array({{{"type", "Replace"}, {"pattern", {{"String", "\u2581"}}}, {"content", " "}},
                                            {{"type", "ByteFallback"}},
                                            {{"type", "Fuse"}}})}};
  auto split_at = [&](const std::string& at) {
    json k = j;
    k["pre_tokenizer"] = {{"type", "Split"}, {"pattern", {{"String", at}}}, {"behavior", "MergedWithPrevious"}, {"invert", false}};
    return make(k);
  };
  // Gemma 3's Split at " " finds no space after the normalizer: "ab a" -> "ab▁a" = a b ▁ a -> r0 -> ab ▁ a
  // -> r1 -> [14, 13]; no "▁" is prepended: " ab" -> "▁ab" -> r0 -> [9, 14].
  EXPECT_EQ(split_at(" ")->encode("ab a", true), (Ids{14, 13}));
  EXPECT_EQ(split_at(" ")->encode(" ab", true), (Ids{9, 14}));
  // Split at "▁" (merged with the piece before): "ab▁" "a" -> a b ▁ -> r0 -> [14, 9]; [10].
  EXPECT_EQ(split_at("\u2581")->encode("ab a", true), (Ids{14, 9, 10}));
  // Decode: "ab" "▁" "a" -> "ab a" (no Strip: nothing was prepended).
  EXPECT_EQ(split_at(" ")->decode({14, 9, 10}), "ab a");
  EXPECT_EQ(split_at(" ")->decode(split_at(" ")->encode(" a  \u00e9b\n", false)), " a  \u00e9b\n");
}

// Decoders: legacy Replace/ByteFallback/Fuse/Strip, Metaspace, null.
TEST(SpBpeTokenizer, Decode) {
  auto t = make(make_json());
  // [9, 17] = "▁" "abc" -> Replace -> " abc" -> Fuse -> Strip one leading ' ' -> "abc".
  EXPECT_EQ(t->decode({9, 17}), "abc");
  // [9, 9, 14] -> "  ab" -> " ab" (only one space stripped).
  EXPECT_EQ(t->decode({9, 9, 14}), " ab");
  // Byte pieces in a row become their bytes: [9, 3, 4] -> " " + "é" -> "é".
  EXPECT_EQ(t->decode({9, 3, 4}), "\u00e9");
  // A run that is not valid UTF-8 becomes one U+FFFD per byte: <0xC3> a <0xC3><0xA9><0xA9> -> "�a���".
  EXPECT_EQ(t->decode({3, 10, 3, 4, 4}), "\ufffda\ufffd\ufffd\ufffd");
  // Added tokens go through the decoder as their content: "<s>" "▁ab" -> "<s> ab" (Strip sees '<' first).
  EXPECT_EQ(t->decode({1, 9, 14}), "<s> ab");
  EXPECT_TRUE(has(error_of([&] { t->decode({99}); }), "id 99 is not a token of T.json"));
  // Metaspace decoder (always): every ▁ of the first token is dropped, the others become spaces:
  // "▁" "▁" "▁a" -> "" " " " a" = "  a"; never: "   a".
  EXPECT_EQ(make(with_metaspace("always", true))->decode({9, 9, 13}), "  a");
  EXPECT_EQ(make(with_metaspace("never", true))->decode({9, 9, 13}), "   a");
  // Null decoder: the pieces joined with " " (HF's default).
  json j = make_json();
  j["decoder"] = nullptr;
  EXPECT_EQ(make(j)->decode({13, 10}), "\u2581a a");
}

// decode(encode(text)) == text for text whose characters all have pieces or byte pieces, with the legacy
// normalizer and with the Metaspace pre-tokenizer of newer conversions (LlamaConverter legacy=False:
// prepend_scheme "first", split false, and the same Replace/ByteFallback/Fuse/Strip decoder).
TEST(SpBpeTokenizer, RoundTrips) {
  json newer = with_metaspace("first", false);
  newer["decoder"] = legacy_decoder();
  for (const json& j : {make_json(), newer}) {
    auto t = make(j);
    for (const std::string s : {"abc cab", "a\n\u00e9\u20ac bc", "ccc  a", "\u20ac", "\n\nab"}) {
      EXPECT_EQ(t->decode(t->encode(s, false)), s) << j["pre_tokenizer"].dump() << " " << s;
    }
  }
}

// Tokenizer::load picks this flavour for a SentencePiece-style tokenizer.json; load_dir loads one alone,
// and prefers tokenizer.model beside it (test_checkpoint.cpp covers that case with a trained model).
TEST(SpBpeTokenizer, LoadsThroughTokenizer) {
  const std::string d = tmp_dir("load");
  write(d + "/tokenizer.json", make_json().dump());
  write(d + "/tokenizer_config.json", R"({"bos_token": "<s>", "eos_token": {"content": "</s>"}, "pad_token": null})");
  EXPECT_EQ(Tokenizer::file_in_dir(d), d + "/tokenizer.json");
  const Tokenizer t = Tokenizer::load_dir(d);
  EXPECT_EQ(t.kind(), "sentencepiece_bpe");
  EXPECT_EQ(t.bos_id(), 1);
  EXPECT_EQ(t.eos_id(), 2);
  EXPECT_EQ(t.pad_id(), -1);
  EXPECT_EQ(t.encode("abc"), (Ids{9, 17}));
  write(d + "/tokenizer_config.json", R"({"bos_token": "<bos>"})");
  EXPECT_TRUE(has(error_of([&] { Tokenizer::load_dir(d); }), "\"bos_token\" '<bos>' is not a token of"));
}

TEST(SpBpeTokenizer, ErrorsNameFileAndField) {
  auto err = [](const json& j) { return error_of([&] { SpBpeTokenizer::from_json(j, "T.json"); }); };
  json j = make_json();
  j["normalizer"]["normalizers"][1]["pattern"] = {{"Regex", " +"}};
  EXPECT_TRUE(has(err(j), "T.json: normalizer.normalizers[1].pattern: only {\"String\": ...}"));
  j = make_json();
  j["normalizer"] = {{"type", "Lowercase"}};
  EXPECT_TRUE(has(err(j), "T.json: normalizer: normalizer type 'Lowercase' is not supported"));
  j = with_metaspace("sometimes", true);
  EXPECT_TRUE(has(err(j), "T.json: pre_tokenizer.prepend_scheme: 'sometimes'"));
  j = make_json();
  j["pre_tokenizer"] = {{"type", "ByteLevel"}};
  EXPECT_TRUE(has(err(j), "T.json: pre_tokenizer: pre-tokenizer type 'ByteLevel' is not supported"));
  j = make_json();
  j["pre_tokenizer"] = {{"type", "Split"}, {"pattern", {{"Regex", "[a-"}}}, {"behavior", "Isolated"}};
  EXPECT_TRUE(has(err(j), "T.json: pre_tokenizer.pattern: pattern does not compile"));
  j = make_json();
  j["pre_tokenizer"] = {{"type", "Split"}, {"pattern", {{"String", " "}}}, {"behavior", "Sideways"}};
  EXPECT_TRUE(has(err(j), "T.json: pre_tokenizer.behavior"));
  j = make_json();
  j["decoder"]["decoders"][3]["content"] = "ab";
  EXPECT_TRUE(has(err(j), "T.json: decoder.decoders[3].content: expected one character"));
  j = make_json();
  j["decoder"] = {{"type", "ByteLevel"}};
  EXPECT_TRUE(has(err(j), "T.json: decoder: decoder type 'ByteLevel' is not supported"));
  j = make_json();
  j["model"]["merges"].push_back("c d");
  EXPECT_TRUE(has(err(j), "T.json: model.merges[7] ('c d'): 'd' is not in model.vocab"));
  j = make_json();
  j["model"]["type"] = "Unigram";
  EXPECT_TRUE(has(err(j), "T.json: model.type \"Unigram\" is not supported"));
  j = make_json();
  j["model"]["byte_fallback"] = "yes";
  EXPECT_TRUE(has(err(j), "T.json: model.byte_fallback: expected true or false"));
  EXPECT_TRUE(has(error_of([] { SpBpeTokenizer::from_json_text("{", "T.json"); }), "T.json: invalid JSON"));
}
