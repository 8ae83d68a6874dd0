// Tokenizer: a SentencePiece model (BPE by default) set up for code and chat:
// byte fallback (any UTF-8 round-trips), digits split, identity normalisation, no dummy prefix and no
// whitespace collapsing (indentation and newlines are exact), and the ChatML special tokens
// <|im_start|> / <|im_end|> as user-defined symbols (single ids).
// Thread safety: after load(), encode/decode/token_id are const and safe to call concurrently.
// SentencePiece itself is reached through a small shared library (spade_spm_shim) opened at run time:
// see policy/spm_shim/spm_shim.cpp for why. Its path is compiled in; SPADE_SPM_SHIM overrides it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

struct SpmApi;

namespace spade::policy {

/// Ids fixed by train() (SentencePiece defaults, plus a pad id).
inline constexpr int kUnkId = 0, kBosId = 1, kEosId = 2, kPadId = 3;
inline constexpr const char* kImStart = "<|im_start|>";
inline constexpr const char* kImEnd = "<|im_end|>";

struct TokenizerTrainOptions {
  std::vector<std::string> input_files;  // text files (read line by line by SentencePiece)
  std::vector<std::string> sentences;    // in-memory text; split at '\n' into training lines
  std::string model_prefix;              // writes <model_prefix>.model and <model_prefix>.vocab
  int vocab_size = 8000;                 // upper bound (hard_vocab_limit=false: small corpora get fewer)
  std::string model_type = "bpe";        // "bpe" | "unigram"
  std::vector<std::string> extra_symbols;  // more user-defined symbols (single ids) after the chat tokens
  int num_threads = 2;
  uint64_t max_sentences = 2000000;      // input_sentence_size: sample at most this many lines
};

class Tokenizer {
 public:
  Tokenizer();  // empty; use load()
  ~Tokenizer();
  Tokenizer(Tokenizer&&) noexcept;
  Tokenizer& operator=(Tokenizer&&) noexcept;
  Tokenizer(const Tokenizer&) = delete;
  Tokenizer& operator=(const Tokenizer&) = delete;

  /// Trains a model and writes <model_prefix>.model/.vocab. Options: byte_fallback, split_digits,
  /// remove_extra_whitespaces=false, normalization_rule_name=identity, add_dummy_prefix=false,
  /// allow_whitespace_only_pieces, character_coverage=1.0, unk/bos/eos/pad = 0/1/2/3,
  /// user_defined_symbols = <|im_start|>, <|im_end|>, extra_symbols.
  /// Throws spade::Error with SentencePiece's message on failure (e.g. no input).
  static void train(const TokenizerTrainOptions& options);

  /// Convenience: train on in-memory text.
  static void train(const std::vector<std::string>& sentences, const std::string& model_prefix, int vocab_size);

  /// Loads a .model file. Throws spade::Error naming the path on failure.
  static Tokenizer load(const std::string& path);

  /// Token ids of `text`; no BOS/EOS added. By default special-token strings inside `text` (e.g. an
  /// environment printing "<|im_end|>") are encoded as ordinary text, never as the special id;
  /// parse_special=true maps them to their ids.
  std::vector<int64_t> encode(const std::string& text, bool parse_special = false) const;

  /// Text of `ids` (special tokens appear as their strings; byte pieces are reassembled).
  /// Throws spade::Error for an id outside [0, vocab_size()).
  std::string decode(const std::vector<int64_t>& ids) const;

  /// Id of a piece (e.g. "<|im_end|>"); throws spade::Error if the piece is not in the vocabulary.
  int64_t token_id(const std::string& piece) const;
  std::string piece(int64_t id) const;

  int64_t bos_id() const;
  int64_t eos_id() const;
  int64_t pad_id() const;
  int64_t vocab_size() const;
  /// Path the model was loaded from (checkpoint saving copies this file).
  const std::string& model_path() const { return path_; }

 private:
  const SpmApi* api_ = nullptr;
  std::shared_ptr<void> sp_;  // SentencePieceProcessor inside the shim
  std::string path_;
  std::vector<std::string> specials_;  // user-defined symbols, for parse_special=false splitting
};

}  // namespace spade::policy
