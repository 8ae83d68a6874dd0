// BpeTokenizer: a Hugging Face tokenizer.json with a byte-level BPE model (Qwen2 / Qwen2.5 / Qwen3,
// Llama 3, GPT-2 style), behind policy::Tokenizer. Torch-free.
// Thread safety: immutable after loading; all methods const and safe to call concurrently.
//
// encode(text) follows HF tokenizers' Tokenizer::encode (tokenizer/mod.rs) without post-processing:
//   1. added tokens ("added_tokens") are cut out of the raw text first (policy/added_tokens.h); tokens
//      with "special": true only when parse_special is true, otherwise their text is encoded as ordinary
//      text and never yields the special id,
//   2. each remaining segment goes through the "normalizer" (null, NFC/NFD/NFKC/NFKD, or a Sequence of
//      these; policy/unicode_normalize.h),
//   3. then the "pre_tokenizer" steps in order: Split (regex or string pattern, any behavior, invert;
//      policy/regex_split.h), Digits (individual_digits), ByteLevel (add_prefix_space applied to each
//      piece, as HF does; use_regex=true splits with the GPT-2 regex), or a Sequence of these,
//   4. and each piece through the BPE model (policy/bpe_model.h), spelled in GPT-2's byte alphabet
//      (policy/byte_level.h).
// No BOS/EOS is added ("post_processor", e.g. Llama 3's TemplateProcessing, is not applied), padding and
// truncation are ignored, and BPE "dropout" (a training-time regularizer) is not applied.
// decode(ids): vocabulary ids map back to bytes through the byte alphabet; added tokens (special or not)
// appear as their "content"; the result is the concatenation (HF's ByteLevel decoder).
//
// The pre-tokenizer regexes of the supported families, as found in their tokenizer.json, are
// kQwen2SplitRegex and kLlama3SplitRegex in policy/regex_split.h; both are
//   Sequence[ Split(Regex, behavior Isolated, invert false), ByteLevel(add_prefix_space false, use_regex false) ]
// and Qwen2's normalizer is NFC, Llama 3's is null (Llama 3 also sets model.ignore_merges = true).
//
// Errors (spade::Error, message naming the file and the JSON field): unreadable file or bad JSON;
// model.type other than "BPE"; missing model.vocab or model.merges, or a merge whose pieces are not in
// the vocabulary; a merge that is neither "a b" nor ["a", "b"]; model.continuing_subword_prefix,
// end_of_word_suffix or byte_fallback set (SentencePiece-style BPE: policy/sp_bpe_tokenizer.h); no
// ByteLevel pre-tokenizer or decoder (not a byte-level BPE); an unsupported normalizer, pre-tokenizer or
// decoder type; a Split pattern that PCRE2 cannot compile; an added token without id or content, or
// with an id beyond the vocabulary's + 2^20 (policy/added_tokens.h).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "policy/added_tokens.h"
#include "policy/bpe_model.h"
#include "policy/regex_split.h"
#include "policy/tokenizer_backend.h"
#include "policy/tokenizer_json.h"
#include "policy/unicode_normalize.h"

namespace spade::policy {

class BpeTokenizer final : public TokenizerBackend {
 public:
  /// Parses tokenizer.json text; `where` (the file name) prefixes every error. See the file comment for
  /// what is supported and what throws.
  static std::unique_ptr<BpeTokenizer> from_json_text(const std::string& json_text, const std::string& where);
  /// The same for already parsed JSON.
  static std::unique_ptr<BpeTokenizer> from_json(const nlohmann::json& j, const std::string& where);

  /// Reads `path` (a tokenizer.json) and then the special ids from the files beside it
  /// (tokenizer_json::read_special_ids: tokenizer_config.json, else config.json). Throws spade::Error
  /// naming the file and key for unreadable or bad JSON, or a token string that is not in the vocabulary.
  static std::unique_ptr<BpeTokenizer> load(const std::string& path);
  /// The same with the file's JSON `j` already parsed.
  static std::unique_ptr<BpeTokenizer> load(const nlohmann::json& j, const std::string& path);

  void set_special_ids(const BpeSpecialIds& ids) { special_ids_ = ids; }

  /// Steps 2-3 of encode() on text with no added tokens: the normalized pre-token pieces (raw bytes).
  std::vector<std::string> pre_tokenize(const std::string& text) const;

  std::vector<int64_t> encode(const std::string& text, bool parse_special) const override;
  /// Throws spade::Error for an id that is neither in the vocabulary nor an added token.
  std::string decode(const std::vector<int64_t>& ids) const override;
  /// An added token's content, or a vocabulary piece in its byte-level spelling (" hi" is "Ġhi").
  /// Throws spade::Error if neither.
  int64_t token_id(const std::string& piece) const override;
  /// Inverse of token_id(); throws spade::Error for an unknown id.
  std::string piece(int64_t id) const override;
  int64_t bos_id() const override { return special_ids_.bos; }
  int64_t eos_id() const override { return special_ids_.eos; }
  int64_t pad_id() const override { return special_ids_.pad; }
  /// One more than the largest id of the vocabulary and the added tokens.
  int64_t vocab_size() const override;
  const char* kind() const override { return "bpe"; }

  const std::vector<AddedToken>& added_tokens() const { return added_.tokens(); }
  const BpeModel& model() const { return *model_; }

 private:
  struct PreStep {
    std::shared_ptr<RegexSplitter> splitter;  // null: no split in this step
    bool add_prefix_space = false;            // ByteLevel only
  };
  std::string where_;
  std::unique_ptr<BpeModel> model_;
  std::vector<UnicodeForm> normalizers_;
  std::vector<PreStep> pre_steps_;
  AddedVocabulary added_;
  BpeSpecialIds special_ids_;
};

}  // namespace spade::policy
