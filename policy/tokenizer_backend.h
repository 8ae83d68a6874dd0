// The interface behind policy::Tokenizer (policy/tokenizer.h): one implementation per tokenizer file
// format (SentencePiece .model: policy/spm_backend.h; HF tokenizer.json byte-level BPE:
// policy/bpe_tokenizer.h; SentencePiece-style tokenizer.json: policy/sp_bpe_tokenizer.h). Each method has
// the contract of the Tokenizer method of the same name.
// Implementations are immutable after loading; all methods are const and safe to call concurrently.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace spade::policy {

class TokenizerBackend {
 public:
  virtual ~TokenizerBackend() = default;
  virtual std::vector<int64_t> encode(const std::string& text, bool parse_special) const = 0;
  virtual std::string decode(const std::vector<int64_t>& ids) const = 0;
  virtual int64_t token_id(const std::string& piece) const = 0;
  virtual std::string piece(int64_t id) const = 0;
  virtual int64_t bos_id() const = 0;
  virtual int64_t eos_id() const = 0;
  virtual int64_t pad_id() const = 0;
  virtual int64_t vocab_size() const = 0;
  /// "sentencepiece", "bpe" or "sentencepiece_bpe" (for logs and errors).
  virtual const char* kind() const = 0;
};

}  // namespace spade::policy
