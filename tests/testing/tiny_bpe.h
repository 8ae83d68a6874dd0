// Test fixture: a tiny byte-level BPE tokenizer.json (the Qwen / Llama 3 tokenizer kind,
// policy/bpe_tokenizer.h) with chosen special tokens, for chat-format tests of families whose real
// tokenizers we do not have here. Vocabulary: ids 0..255 = the GPT-2 byte alphabet pieces (byte b -> id b),
// 256.. = a few merges (below, in rank order), then the special tokens in the order given. Pre-tokenizer:
// the Llama 3 split regex; no normalizer. Header-only (namespace spade::fixtures).
#pragma once
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "policy/byte_level.h"
#include "policy/regex_split.h"

namespace spade::fixtures {

/// Chat-format special tokens of the families (their tokenizer_config.json / tokenizer.json).
inline const std::vector<std::string> kLlama3Specials = {"<|begin_of_text|>", "<|end_of_text|>",
                                                         "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"};
inline const std::vector<std::string> kChatMLSpecials = {"<|endoftext|>", "<|im_start|>", "<|im_end|>"};
inline const std::vector<std::string> kLlama2Specials = {"<unk>", "<s>", "</s>"};

/// Writes DIR/tokenizer.json (see the file comment) and returns its path. Special token k gets id
/// 256 + (number of merges) + k; tiny_bpe_first_special_id() gives the first.
inline std::string write_tiny_bpe(const std::string& dir, const std::vector<std::string>& specials) {
  using nlohmann::json;
  auto sym = [](unsigned char b) {
    std::string s;
    policy::byte_level::append_utf8(s, policy::byte_level::byte_to_char(b));
    return s;
  };
  json vocab = json::object();
  for (int b = 0; b < 256; ++b) vocab[sym(static_cast<unsigned char>(b))] = b;
  // "\n\n" (Llama 3's header separator), " the", "[INST]"-ish pieces: merges that span typical
  // template text, so a wrong boundary would show up as different ids.
  const std::vector<std::pair<std::string, std::string>> merges = {
      {sym('\n'), sym('\n')}, {sym(' '), "t"}, {"h", "e"}, {sym(' ') + "t", "he"}, {"I", "N"}, {"S", "T"},
      {"IN", "ST"}, {"[", "INST"}, {"[INST", "]"}, {"a", "s"}, {"u", "s"}, {"us", "e"}, {"use", "r"}};
  json mj = json::array();
  for (size_t r = 0; r < merges.size(); ++r) {
    vocab[merges[r].first + merges[r].second] = 256 + static_cast<int>(r);
    mj.push_back(merges[r].first + " " + merges[r].second);
  }
  json added = json::array();
  const int first = 256 + static_cast<int>(merges.size());
  for (size_t k = 0; k < specials.size(); ++k)
    added.push_back({{"id", first + static_cast<int>(k)}, {"content", specials[k]}, {"special", true}});
  const json j = {
      {"version", "1.0"},
      {"added_tokens", added},
      {"normalizer", nullptr},
      {"pre_tokenizer",
       {{"type", "Sequence"},
        {"pretokenizers",
         json::array({{{"type", "Split"}, {"pattern", {{"Regex", policy::kLlama3SplitRegex}}}, {"behavior", "Isolated"},
                       {"invert", false}},
                      {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", false}, {"use_regex", false}}})}}},
      {"post_processor", nullptr},
      {"decoder", {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", true}, {"use_regex", true}}},
      {"model",
       {{"type", "BPE"}, {"dropout", nullptr}, {"unk_token", nullptr}, {"continuing_subword_prefix", nullptr},
        {"end_of_word_suffix", nullptr}, {"fuse_unk", false}, {"byte_fallback", false}, {"ignore_merges", false},
        {"vocab", vocab}, {"merges", mj}}},
  };
  const std::string path = dir + "/tokenizer.json";
  std::ofstream(path, std::ios::binary) << j.dump();
  return path;
}

/// Id of the first special token of write_tiny_bpe() (256 bytes + 13 merges).
inline int64_t tiny_bpe_first_special_id() { return 256 + 13; }

}  // namespace spade::fixtures
