#include "policy/tokenizer.h"

#include <filesystem>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/atomic_file.h"
#include "policy/bpe_tokenizer.h"
#include "policy/sp_bpe_tokenizer.h"
#include "policy/spm_backend.h"
#include "policy/tokenizer_json.h"

namespace spade::policy {
namespace fs = std::filesystem;

Tokenizer::Tokenizer() = default;
Tokenizer::~Tokenizer() = default;
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;

void Tokenizer::train(const TokenizerTrainOptions& options) { SpmBackend::train(options); }

void Tokenizer::train(const std::vector<std::string>& sentences, const std::string& model_prefix, int vocab_size) {
  TokenizerTrainOptions o;
  o.sentences = sentences;
  o.model_prefix = model_prefix;
  o.vocab_size = vocab_size;
  train(o);
}

Tokenizer Tokenizer::load(const std::string& path) {
  Tokenizer t;
  if (fs::path(path).extension() == ".json") {
    const nlohmann::json j = tokenizer_json::read(path);
    if (tokenizer_json::is_sentencepiece_style(j))
      t.impl_ = SpBpeTokenizer::load(j, path);
    else
      t.impl_ = BpeTokenizer::load(j, path);
  } else
    t.impl_ = SpmBackend::load(path);
  t.path_ = path;
  return t;
}

namespace {

/// True when the tokenizer.json at `path` is SentencePiece-style (tokenizer_json::is_sentencepiece_style).
/// Unreadable, invalid or too deeply nested JSON: false (loading it reports).
bool sentencepiece_style_json(const fs::path& path) {
  try {
    const std::string file = path.string();
    return tokenizer_json::is_sentencepiece_style(tokenizer_json::parse(spade::read_file(file, tokenizer_json::kMaxFileBytes), file));
  } catch (const std::exception&) {
    return false;
  }
}

}  // namespace

std::string Tokenizer::file_in_dir(const std::string& dir) {
  const fs::path json = fs::path(dir) / "tokenizer.json", model = fs::path(dir) / "tokenizer.model";
  const bool has_json = fs::exists(json), has_model = fs::exists(model);
  // Both files and a SentencePiece-style JSON: the .model, read by the sentencepiece library (the
  // reference implementation of that model); the JSON alone loads through SpBpeTokenizer.
  if (has_json && !(has_model && sentencepiece_style_json(json))) return json.string();
  if (has_model) return model.string();
  return "";
}

Tokenizer Tokenizer::load_dir(const std::string& dir) {
  const std::string file = file_in_dir(dir);
  if (file.empty())
    throw spade::Error(dir + ": no tokenizer.json or tokenizer.model in this directory (not an HF checkpoint with a "
                       "tokenizer?)");
  return load(file);
}

const TokenizerBackend& Tokenizer::backend(const char* what) const {
  if (!impl_) throw spade::Error(std::string("Tokenizer::") + what + ": no model loaded (use Tokenizer::load)");
  return *impl_;
}

std::vector<int64_t> Tokenizer::encode(const std::string& text, bool parse_special) const {
  return backend("encode").encode(text, parse_special);
}
std::string Tokenizer::decode(const std::vector<int64_t>& ids) const { return backend("decode").decode(ids); }
int64_t Tokenizer::token_id(const std::string& piece) const { return backend("token_id").token_id(piece); }
std::string Tokenizer::piece(int64_t id) const { return backend("piece").piece(id); }
int64_t Tokenizer::bos_id() const { return backend("bos_id").bos_id(); }
int64_t Tokenizer::eos_id() const { return backend("eos_id").eos_id(); }
int64_t Tokenizer::pad_id() const { return backend("pad_id").pad_id(); }
int64_t Tokenizer::vocab_size() const { return impl_ ? impl_->vocab_size() : 0; }
std::string Tokenizer::kind() const { return impl_ ? impl_->kind() : ""; }

}  // namespace spade::policy
