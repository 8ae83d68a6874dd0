// Tokenizer: text <-> token ids, with one of two backends chosen by the file loaded:
//  - a SentencePiece .model (policy/spm_backend.h): our own tiny models (trained by train() below),
//    Llama 2, Mistral, Gemma. train() sets it up for code and chat: byte fallback (any UTF-8
//    round-trips), digits split, identity normalisation, no dummy prefix and no whitespace collapsing
//    (indentation and newlines are exact), and the ChatML special tokens <|im_start|> / <|im_end|> as
//    user-defined symbols (single ids).
//  - a Hugging Face tokenizer.json with a byte-level BPE model (policy/bpe_tokenizer.h): Qwen2 / 2.5 / 3,
//    Llama 3 (vocab, merges, pre-tokenizer regex via PCRE2, NFC, added/special tokens; the supported
//    subset and the errors are listed there).
//  - a Hugging Face tokenizer.json converted from SentencePiece BPE (policy/sp_bpe_tokenizer.h): Llama 2,
//    Mistral, Gemma, TinyLlama (byte fallback, Prepend/Replace normalizer or Metaspace, no pre-tokenizer
//    regex), for directories that ship it without tokenizer.model.
// Thread safety: after load(), all methods are const and safe to call concurrently.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace spade::policy {

class TokenizerBackend;

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

  /// Loads a tokenizer file, by name: "*.json" -> HF tokenizer.json, SentencePiece-style BPE when
  /// tokenizer_json::is_sentencepiece_style (model.byte_fallback, Metaspace, Prepend: SpBpeTokenizer),
  /// else byte-level BPE (BpeTokenizer); bos/eos/pad ids from tokenizer_config.json, else config.json,
  /// beside it. Anything else -> SentencePiece .model (ids stored in the model). Throws spade::Error naming
  /// the path on failure.
  static Tokenizer load(const std::string& path);

  /// Loads the tokenizer of an HF checkpoint directory: DIR/tokenizer.json when present (preferred: it is
  /// what transformers' fast tokenizers use), else DIR/tokenizer.model. Exception: when DIR has both and
  /// tokenizer.json is a SentencePiece-style BPE (model.byte_fallback, Metaspace, Prepend: what HF
  /// ships beside tokenizer.model for Llama 2, Mistral, Gemma), tokenizer.model is loaded (the
  /// sentencepiece library is the reference implementation of that model); such a tokenizer.json alone
  /// loads through SpBpeTokenizer. Throws spade::Error naming the directory when it has neither.
  static Tokenizer load_dir(const std::string& dir);

  /// The file load_dir(dir) would load ("" when the directory has neither tokenizer.json nor
  /// tokenizer.model).
  static std::string file_in_dir(const std::string& dir);

  /// Token ids of `text`; no BOS/EOS added. By default special-token strings inside `text` (e.g. an
  /// environment printing "<|im_end|>") are encoded as ordinary text, never as the special id;
  /// parse_special=true maps them to their ids. With a tokenizer.json: added tokens marked "special"
  /// follow parse_special; added tokens not marked special are always matched (as HF tokenizers does).
  /// Throws spade::Error if no model is loaded.
  std::vector<int64_t> encode(const std::string& text, bool parse_special = false) const;

  /// Text of `ids` (special tokens appear as their strings; byte pieces are reassembled).
  /// Throws spade::Error for an id outside [0, vocab_size()) (or, for a tokenizer.json, an id in a
  /// gap of its vocabulary).
  std::string decode(const std::vector<int64_t>& ids) const;

  /// Id of a piece (e.g. "<|im_end|>"); throws spade::Error if the piece is not in the vocabulary.
  /// Pieces are spelled as the backend stores them: SentencePiece "\u2581hi", byte-level BPE "\u0120hi"
  /// for " hi"; special/added tokens as their text.
  int64_t token_id(const std::string& piece) const;
  /// Inverse of token_id(); throws spade::Error for an unknown id.
  std::string piece(int64_t id) const;

  /// Special ids; -1 when the tokenizer has none (e.g. Qwen2 has no BOS).
  int64_t bos_id() const;
  int64_t eos_id() const;
  int64_t pad_id() const;
  /// One more than the largest token id (0 when nothing is loaded).
  int64_t vocab_size() const;
  /// Path the model was loaded from (checkpoint saving copies this file: save_checkpoint).
  const std::string& model_path() const { return path_; }
  /// "sentencepiece", "bpe" (byte-level), "sentencepiece_bpe" (SentencePiece-style tokenizer.json), or ""
  /// when nothing is loaded.
  std::string kind() const;

 private:
  const TokenizerBackend& backend(const char* what) const;
  std::shared_ptr<const TokenizerBackend> impl_;
  std::string path_;
};

}  // namespace spade::policy
