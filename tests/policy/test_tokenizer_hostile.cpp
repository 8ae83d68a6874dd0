// Hostile inputs to the tokenizer.json loaders (policy/tokenizer_json.h, policy/bpe_model.h,
// policy/added_tokens.h, policy/sp_bpe_tokenizer.h): files built to crash or exhaust memory must give a
// spade::Error naming the file and the JSON field, and added-token matching must follow HF tokenizers'
// character classes (Unicode, not ASCII) for lstrip / rstrip / single_word.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <functional>
#include <fstream>
#include <string>
#include <vector>

#include "common/error.h"
#include "policy/sp_bpe_tokenizer.h"
#include "policy/tokenizer.h"

namespace spade::policy {
namespace {

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const spade::Error& e) {
    return e.what();
  }
  return "";
}

// A tiny SentencePiece-style tokenizer.json (Llama 2 style normalizer and decoder) whose added tokens
// carry lstrip (<s>), rstrip (</s>) and single_word (<x>, not special) flags.
const char* kTinyAdded =
    R"({"added_tokens":[)"
    R"({"id":0,"content":"<unk>","special":true,"single_word":false,"lstrip":false,"rstrip":false,"normalized":false},)"
    R"({"id":1,"content":"<s>","lstrip":true,"special":true,"single_word":false,"rstrip":false,"normalized":false},)"
    R"({"id":2,"content":"</s>","rstrip":true,"special":true,"single_word":false,"lstrip":false,"normalized":false},)"
    R"({"id":9,"content":"<x>","single_word":true,"special":false,"lstrip":false,"rstrip":false,"normalized":false}],)"
    R"("normalizer":{"type":"Sequence","normalizers":[{"type":"Prepend","prepend":"\u2581"},)"
    R"({"type":"Replace","pattern":{"String":" "},"content":"\u2581"}]},"pre_tokenizer":null,)"
    R"("decoder":{"type":"Sequence","decoders":[)"
    R"({"type":"Replace","pattern":{"String":"\u2581"},"content":" "},{"type":"Fuse"}]},)"
    R"("model":{"type":"BPE","unk_token":"<unk>","fuse_unk":true,"byte_fallback":false,)"
    R"("vocab":{"<unk>":0,"<s>":1,"</s>":2,"\u2581":3,"a":4,"b":5,"\u2581a":6,"\u00e9":7,"<":8,">":10,"x":11,"<x>":9},)"
    R"("merges":["\u2581 a"]}})";

// Expected ids: HF tokenizers 0.23.2 (npm "tokenizers", the Rust library's Node binding, from
// .cache/tokenizers/node) on kTinyAdded, encode(text, add_special_tokens = false). HF strips regex \s
// (Unicode White_Space: U+00A0, U+2003, U+3000, U+0085 included; U+200B not) for lstrip / rstrip, and
// single_word rejects a neighbour matching regex \w (letters, marks, Nd digits, Pc, ZWJ; not ² (No)).
TEST(TokenizerHostile, AddedTokenFlagsUseUnicodeClassesAsHf) {
  auto t = SpBpeTokenizer::from_json_text(kTinyAdded, "tiny.json");
  struct Case {
    const char* text;
    std::vector<int64_t> ids;
  };
  const std::vector<Case> cases = {
      {"a\u00a0<s>b", {6, 1, 3, 5}},                 // lstrip absorbs NBSP
      {"a\u3000\u2003<s>b", {6, 1, 3, 5}},           // ideographic space, em space
      {"</s>\u3000\u00a0b", {2, 3, 5}},              // rstrip
      {"\u00e9<x>a", {3, 7, 8, 11, 10, 4}},          // letters on both sides: not a word of its own
      {"a <x> b", {6, 3, 9, 3, 3, 5}},               // spaces around: matched
      {"\u0663<x>", {3, 0, 8, 11, 10}},              // preceded by a digit (Nd): not matched
      {"<x>\u00e9", {3, 8, 11, 10, 7}},              // followed by a letter: not matched
      {"_<x>", {3, 0, 8, 11, 10}},                   // '_' counts as a word character
      {"a\u00a0<x>\u3000b", {6, 0, 9, 3, 0, 5}},     // NBSP / U+3000 are not word characters
      {"\u00b2<x>", {3, 0, 9}},                      // superscript two (No): not a word character
      {"<x>\u00b2", {9, 3, 0}},
      {"e\u0301<x>", {3, 0, 8, 11, 10}},             // combining acute (Mn): a word character
      {"<x>\u0301", {3, 8, 11, 10, 0}},
      {"\u203f<x>", {3, 0, 8, 11, 10}},              // undertie (Pc)
      {"\u200d<x>", {3, 0, 8, 11, 10}},              // zero-width joiner (Join_Control)
      {"a\u0085<s>b", {6, 1, 3, 5}},                 // NEL is White_Space
      {"a\u200b<s>b", {6, 0, 1, 3, 5}},              // zero-width space is not
      {"</s>\u2028b", {2, 3, 5}},                    // line separator is
  };
  for (const Case& c : cases) EXPECT_EQ(t->encode(c.text, true), c.ids) << c.text;
}

// JSON nested far deeper than any tokenizer.json: nlohmann's dump() and copies recurse once per level,
// so 200000 levels overflowed the stack (SIGSEGV in Tokenizer::load) and a 20000-deep normalizer
// Sequence built O(depth^2) bytes of error-path strings. HF's loader (serde_json) stops at 128 levels.
TEST(TokenizerHostile, DeeplyNestedJsonIsAnError) {
  // Replaces the value of `key` in kTinyAdded (it runs up to `next_key`) by `value`.
  auto with = [](const std::string& key, const std::string& next_key, const std::string& value) {
    std::string s = kTinyAdded;
    const size_t b = s.find("\"" + key + "\":"), e = s.find("\"" + next_key + "\":");
    EXPECT_TRUE(b != std::string::npos && e != std::string::npos && b < e);
    return s.substr(0, b) + "\"" + key + "\":" + value + "," + s.substr(e);
  };
  std::string arrays(200000, '[');  // the decoder: 200000 nested arrays (dumped when sniffing the flavour)
  arrays += std::string(200000, ']');
  std::string seq;                  // the normalizer: a Sequence nested 20000 deep
  for (int i = 0; i < 20000; ++i) seq += "{\"type\":\"Sequence\",\"normalizers\":[";
  seq += "{\"type\":\"NFC\"}";
  for (int i = 0; i < 20000; ++i) seq += "]}";
  for (const auto& [key, text] : std::vector<std::pair<std::string, std::string>>{
           {"decoder", with("decoder", "model", arrays)}, {"normalizer", with("normalizer", "pre_tokenizer", seq)}}) {
    const std::string err = error_of([&] { SpBpeTokenizer::from_json_text(text, "deep.json"); });
    EXPECT_NE(err.find("deep.json: JSON nested deeper than 128 levels under \"" + key + "\""), std::string::npos)
        << err.substr(0, 300);

    // The same through Tokenizer::file_in_dir / load (which first sniff the flavour), beside a tokenizer.model.
    const auto dir = std::filesystem::temp_directory_path() / ("spade_hostile_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    std::ofstream(dir / "tokenizer.json") << text;
    std::ofstream(dir / "tokenizer.model") << "not a model";
    const std::string file = Tokenizer::file_in_dir(dir.string());
    EXPECT_EQ(file, (dir / "tokenizer.json").string());
    const std::string err2 = error_of([&] { Tokenizer::load(file); });
    EXPECT_NE(err2.find("nested deeper than 128 levels under \"" + key + "\""), std::string::npos)
        << err2.substr(0, 300);
    std::filesystem::remove_all(dir);
  }
}

// A vocabulary id near INT32_MAX made BpeModel allocate three by-id tables of 2^31 entries (std::bad_alloc
// here, an OOM kill elsewhere) instead of reporting the file.
TEST(TokenizerHostile, HugeVocabIdIsAnError) {
  std::string text = kTinyAdded;
  const std::string from = "\"x\":11";
  text.replace(text.find(from), from.size(), "\"x\":2147483647");
  const std::string err = error_of([&] { SpBpeTokenizer::from_json_text(text, "huge.json"); });
  EXPECT_NE(err.find("huge.json"), std::string::npos) << err;
  EXPECT_NE(err.find("model.vocab"), std::string::npos) << err;
  EXPECT_NE(err.find("2147483647"), std::string::npos) << err;
}

// The same for an added-token id (2^62 was accepted: vocab_size() 2^62 + 1, the size a new model's
// embedding would be given). HF's loader reads ids as u32; the bound is BpeModel's (pieces + 2^20).
TEST(TokenizerHostile, HugeAddedTokenIdIsAnError) {
  std::string text = kTinyAdded;
  const std::string from = "{\"id\":9,";
  text.replace(text.find(from), from.size(), "{\"id\":4611686018427387904,");
  const std::string err = error_of([&] { SpBpeTokenizer::from_json_text(text, "huge.json"); });
  EXPECT_NE(err.find("huge.json: added_tokens[3]"), std::string::npos) << err;
  EXPECT_NE(err.find("4611686018427387904"), std::string::npos) << err;
}

}  // namespace
}  // namespace spade::policy
