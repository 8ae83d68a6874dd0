// SpBpeTokenizer: a Hugging Face tokenizer.json converted from a SentencePiece BPE model (HF's
// LlamaConverter / GemmaConverter: Llama 2, Mistral v0.1-v0.3, Gemma, TinyLlama, and their fine-tunes
// that ship only tokenizer.json), behind policy::Tokenizer. The second BPE flavour next to the
// byte-level one (policy/bpe_tokenizer.h); both share the added-token matching (policy/added_tokens.h)
// and the merge machinery (policy/bpe_model.h). Torch-free.
// Thread safety: immutable after loading; all methods const and safe to call concurrently.
//
// encode(text) follows HF tokenizers' Tokenizer::encode (tokenizer/mod.rs) without post-processing:
//   1. added tokens are cut out of the raw text (policy/added_tokens.h; "special" ones only when
//      parse_special is true);
//   2. each remaining segment goes through the "normalizer": null, or Prepend {prepend} (the string put
//      before a non-empty segment: Llama 2's "▁"), Replace {pattern {"String": a}, content b} (every a ->
//      b: " " -> "▁"), NFC/NFD/NFKC/NFKD, or a Sequence of these;
//   3. then the "pre_tokenizer": null (the whole normalized segment is one word: merges run across
//      spaces, as in SentencePiece), Metaspace {replacement r, prepend_scheme, split}: ' ' -> r, then r
//      put in front unless the word already starts with it ("always"; "first": only for the word that
//      starts the text; "never": not at all; older files: add_prefix_space true/false = always/never),
//      then with split (default true) the word is cut before every r (HF MergedWithNext); Split (a String
//      or Regex pattern, any behavior: policy/regex_split.h; Gemma 3 splits at " ", a no-op after its
//      Replace normalizer); or a Sequence of these;
//   4. each word through the model (policy/sp_bpe_model.h: characters, byte fallback "<0xXX>", unk,
//      merges by rank).
// The post_processor (Llama 2's TemplateProcessing adding <s>) is not applied: encode() adds no BOS;
// callers add bos_id() (from tokenizer_config.json) where the chat format wants it. Padding, truncation
// and BPE dropout are ignored.
// decode(ids): each id becomes its added-token content or vocabulary piece, and the "decoder" turns the
// list into text (policy/sp_decoder.h; Llama 2: Replace "▁" -> " ", ByteFallback, Fuse, Strip one leading
// space).
//
// Errors (spade::Error naming the file and the JSON path): unreadable file or bad JSON; model.type other
// than "BPE", missing or malformed vocab/merges, a merge whose pieces are not in the vocabulary,
// continuing_subword_prefix / end_of_word_suffix set (tokenizer_json::parse_bpe_model); a normalizer,
// pre-tokenizer or decoder type not listed above (ByteLevel included: that file is a byte-level BPE); a
// Split pattern that PCRE2 cannot compile;
// a Replace with a Regex pattern; a Metaspace prepend_scheme other than always/first/never; an added
// token without id or content, or with an id beyond the vocabulary's + 2^20 (policy/added_tokens.h).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "policy/added_tokens.h"
#include "policy/regex_split.h"
#include "policy/sp_bpe_model.h"
#include "policy/sp_decoder.h"
#include "policy/tokenizer_backend.h"
#include "policy/tokenizer_json.h"
#include "policy/unicode_normalize.h"

namespace spade::policy {

class SpBpeTokenizer final : public TokenizerBackend {
 public:
  /// Builds the tokenizer from a parsed tokenizer.json; `where` (the file name) prefixes every error.
  /// See the file comment for what is supported and what throws.
  static std::unique_ptr<SpBpeTokenizer> from_json(const nlohmann::json& j, const std::string& where);
  /// The same from JSON text (throws spade::Error "<where>: invalid JSON: ..." on a syntax error).
  static std::unique_ptr<SpBpeTokenizer> from_json_text(const std::string& json_text, const std::string& where);

  /// Builds from the parsed file `j` read from `path`, then sets the special ids from the files beside it
  /// (tokenizer_json::read_special_ids: tokenizer_config.json, else config.json). Throws spade::Error
  /// naming the file and key as from_json and read_special_ids do.
  static std::unique_ptr<SpBpeTokenizer> load(const nlohmann::json& j, const std::string& path);

  void set_special_ids(const BpeSpecialIds& ids) { special_ids_ = ids; }

  /// Steps 2-3 of encode() on one segment without added tokens: the words the model sees (UTF-8, spaces
  /// as the replacement character). `starts_text`: the segment begins at offset 0 of the text
  /// (Metaspace prepend_scheme "first": of the words of such a segment only the first starts the text).
  std::vector<std::string> pre_tokenize(const std::string& segment, bool starts_text) const;

  std::vector<int64_t> encode(const std::string& text, bool parse_special) const override;
  /// Throws spade::Error for an id that is neither in the vocabulary nor an added token.
  std::string decode(const std::vector<int64_t>& ids) const override;
  /// An added token's content, or a vocabulary piece as spelled in the file (" hi" is "▁hi", a newline
  /// "<0x0A>"). Throws spade::Error if neither.
  int64_t token_id(const std::string& piece) const override;
  /// Inverse of token_id(); throws spade::Error for an unknown id.
  std::string piece(int64_t id) const override;
  int64_t bos_id() const override { return special_ids_.bos; }
  int64_t eos_id() const override { return special_ids_.eos; }
  int64_t pad_id() const override { return special_ids_.pad; }
  /// One more than the largest id of the vocabulary and the added tokens.
  int64_t vocab_size() const override;
  const char* kind() const override { return "sentencepiece_bpe"; }

  const std::vector<AddedToken>& added_tokens() const { return added_.tokens(); }
  const SpBpeModel& model() const { return *model_; }

 private:
  struct NormStep {
    enum Kind { kUnicode, kPrepend, kReplace } kind = kUnicode;
    UnicodeForm form = UnicodeForm::kNFC;  // kUnicode
    std::string a, b;                      // kPrepend: a = prefix; kReplace: a -> b
  };
  enum class Prepend { kAlways, kFirst, kNever };
  struct PreStep {
    std::shared_ptr<RegexSplitter> splitter;  // Split; null: Metaspace (the fields below)
    std::string replacement = "\u2581";
    Prepend prepend = Prepend::kAlways;
    bool split = true;
  };
  void parse_normalizer(const nlohmann::json& j, const std::string& where);
  void parse_pre_tokenizer(const nlohmann::json& j, const std::string& where);

  explicit SpBpeTokenizer(std::unique_ptr<SpBpeModel> model) : model_(std::move(model)) {}

  std::string where_;
  std::unique_ptr<SpBpeModel> model_;
  SpDecoder decoder_;
  std::vector<NormStep> normalizers_;
  std::vector<PreStep> pre_steps_;
  AddedVocabulary added_;
  BpeSpecialIds special_ids_;
};

}  // namespace spade::policy
