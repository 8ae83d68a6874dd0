// SpmBackend: a SentencePiece .model behind policy::Tokenizer (see policy/tokenizer.h for the options
// our own models are trained with). SentencePiece itself is reached through a small shared library
// (spade_spm_shim) opened at run time: see policy/spm_shim/spm_shim.cpp for why. Its path is compiled
// in; the SPADE_SPM_SHIM environment variable overrides it.
// Thread safety: immutable after load(); all methods const and safe to call concurrently.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "policy/tokenizer_backend.h"

struct SpmApi;

namespace spade::policy {

struct TokenizerTrainOptions;

class SpmBackend final : public TokenizerBackend {
 public:
  /// Loads a .model file. Throws spade::Error naming the path (or the shim) on failure.
  static std::unique_ptr<SpmBackend> load(const std::string& path);
  /// Trains a model (Tokenizer::train documents the options). Throws spade::Error on failure.
  static void train(const TokenizerTrainOptions& options);

  std::vector<int64_t> encode(const std::string& text, bool parse_special) const override;
  std::string decode(const std::vector<int64_t>& ids) const override;
  int64_t token_id(const std::string& piece) const override;
  std::string piece(int64_t id) const override;
  /// The ids stored in the .model (train() fixes them to kBosId / kEosId / kPadId).
  int64_t bos_id() const override;
  int64_t eos_id() const override;
  int64_t pad_id() const override;
  int64_t vocab_size() const override;
  const char* kind() const override { return "sentencepiece"; }

 private:
  const SpmApi* api_ = nullptr;
  std::shared_ptr<void> sp_;  // SentencePieceProcessor inside the shim
  std::string path_;
  std::vector<std::string> specials_;  // user-defined symbols, for parse_special=false splitting
};

}  // namespace spade::policy
