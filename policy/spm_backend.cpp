#include "policy/spm_backend.h"

#include <dlfcn.h>

#include <mutex>
#include <unordered_map>

#include "common/error.h"
#include "policy/spm_shim/spm_api.h"
#include "policy/tokenizer.h"

#ifndef SPADE_SPM_SHIM_PATH
#define SPADE_SPM_SHIM_PATH "libspade_spm_shim.so"
#endif

namespace spade::policy {
namespace {

// Opens the shim once per process (never closed).
const SpmApi& api() {
  static const SpmApi* table = [] {
    const char* env = std::getenv("SPADE_SPM_SHIM");
    const std::string path = env && *env ? env : SPADE_SPM_SHIM_PATH;
    void* lib = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
    if (!lib)
      throw spade::Error("cannot load the SentencePiece shim '" + path + "': " + ::dlerror() +
                         " (build target spade_spm_shim, or point SPADE_SPM_SHIM at libspade_spm_shim.so)");
    auto fn = reinterpret_cast<const SpmApi* (*)()>(::dlsym(lib, "spade_spm_api"));
    if (!fn) throw spade::Error(path + ": symbol spade_spm_api not found");
    const SpmApi* t = fn();
    if (t->version != SPM_API_VERSION) throw spade::Error(path + ": SentencePiece shim version mismatch; rebuild");
    return t;
  }();
  return *table;
}

// Takes ownership of a malloc'ed error string; throws if non-null.
void check(char* err, const std::string& context) {
  if (!err) return;
  std::string msg(err);
  api().free_buf(err);
  throw spade::Error(context + ": SentencePiece: " + msg);
}

std::string join(const std::vector<std::string>& v, char sep) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) out += (i ? std::string(1, sep) : "") + v[i];
  return out;
}

}  // namespace

void SpmBackend::train(const TokenizerTrainOptions& o) {
  if (o.model_prefix.empty()) throw spade::Error("Tokenizer::train: model_prefix is empty");
  if (o.input_files.empty() && o.sentences.empty()) throw spade::Error("Tokenizer::train: no input text");
  if (!o.input_files.empty() && !o.sentences.empty())
    throw spade::Error("Tokenizer::train: give either input_files or sentences, not both");
  std::vector<std::string> symbols = {kImStart, kImEnd};
  symbols.insert(symbols.end(), o.extra_symbols.begin(), o.extra_symbols.end());
  for (const auto& s : symbols)
    if (s.find(',') != std::string::npos) throw spade::Error("Tokenizer::train: symbol '" + s + "' contains ','");
  std::vector<std::pair<std::string, std::string>> kw = {
      {"model_prefix", o.model_prefix},
      {"vocab_size", std::to_string(o.vocab_size)},
      {"model_type", o.model_type},
      {"byte_fallback", "true"},
      {"split_digits", "true"},
      {"remove_extra_whitespaces", "false"},
      {"normalization_rule_name", "identity"},
      {"add_dummy_prefix", "false"},
      {"allow_whitespace_only_pieces", "true"},
      {"split_by_whitespace", "true"},
      {"character_coverage", "1.0"},
      {"unk_id", std::to_string(kUnkId)},
      {"bos_id", std::to_string(kBosId)},
      {"eos_id", std::to_string(kEosId)},
      {"pad_id", std::to_string(kPadId)},
      {"user_defined_symbols", join(symbols, ',')},
      {"hard_vocab_limit", "false"},
      {"num_threads", std::to_string(o.num_threads)},
      {"input_sentence_size", std::to_string(o.max_sentences)},
      {"shuffle_input_sentence", "true"},
      {"max_sentence_length", "16384"},
      {"minloglevel", "2"},
  };
  if (!o.input_files.empty()) kw.emplace_back("input", join(o.input_files, ','));
  std::vector<const char*> keys, values;
  for (const auto& kv : kw) {
    keys.push_back(kv.first.c_str());
    values.push_back(kv.second.c_str());
  }
  // SentencePiece trains on lines: in-memory text is split at '\n' (newlines are then covered by
  // byte fallback, which keeps them exact).
  std::vector<std::string> lines;
  for (const auto& s : o.sentences) {
    size_t start = 0;
    while (start <= s.size()) {
      size_t nl = s.find('\n', start);
      if (nl == std::string::npos) nl = s.size();
      if (nl > start) lines.push_back(s.substr(start, nl - start));
      start = nl + 1;
    }
  }
  std::vector<const char*> line_ptrs;
  for (const auto& l : lines) line_ptrs.push_back(l.c_str());
  check(api().train(keys.data(), values.data(), keys.size(), o.input_files.empty() ? line_ptrs.data() : nullptr,
                    line_ptrs.size()),
        "Tokenizer::train(" + o.model_prefix + ")");
}

std::unique_ptr<SpmBackend> SpmBackend::load(const std::string& path) {
  auto owned = std::make_unique<SpmBackend>();
  SpmBackend& t = *owned;
  t.api_ = &api();
  const SpmApi* a = t.api_;
  t.sp_ = std::shared_ptr<void>(a->create(), [a](void* h) { a->destroy(h); });
  check(a->load(t.sp_.get(), path.c_str()), path + ": cannot load tokenizer model");
  t.path_ = path;
  // Ordinary pieces spelled "<...>" (the chat tokens and extra_symbols such as "<|tool|>") are the
  // user-defined symbols; encode(parse_special=false) keeps text from producing them.
  for (int i = 0; i < a->piece_size(t.sp_.get()); ++i) {
    if (a->kind(t.sp_.get(), i) != 0) continue;
    const std::string p = t.piece(i);
    if (p.size() > 2 && p.front() == '<' && p.back() == '>') t.specials_.push_back(p);
  }
  return owned;
}

std::vector<int64_t> SpmBackend::encode(const std::string& text, bool parse_special) const {
    std::vector<int64_t> out;
  auto encode_plain = [&](const std::string& s) {
    if (s.empty()) return;
    int* ids = nullptr;
    size_t n = 0;
    check(api_->encode(sp_.get(), s.data(), s.size(), &ids, &n), "Tokenizer::encode");
    out.insert(out.end(), ids, ids + n);
    api_->free_buf(ids);
  };
  if (parse_special || specials_.empty()) {
    encode_plain(text);
    return out;
  }
  // Split at every occurrence of a special string; encode the occurrence as text in two parts
  // (its first byte, then the rest) so SentencePiece's symbol matcher cannot produce the special id.
  size_t pos = 0;
  while (pos < text.size()) {
    size_t best = std::string::npos, best_len = 0;
    for (const auto& s : specials_) {
      size_t f = text.find(s, pos);
      if (f != std::string::npos && (f < best || (f == best && s.size() > best_len))) {
        best = f;
        best_len = s.size();
      }
    }
    if (best == std::string::npos) {
      encode_plain(text.substr(pos));
      break;
    }
    encode_plain(text.substr(pos, best - pos));
    encode_plain(text.substr(best, 1));
    encode_plain(text.substr(best + 1, best_len - 1));
    pos = best + best_len;
  }
  return out;
}

std::string SpmBackend::decode(const std::vector<int64_t>& ids) const {
    std::vector<int> v;
  v.reserve(ids.size());
  const int64_t n = vocab_size();
  for (int64_t id : ids) {
    if (id < 0 || id >= n)
      throw spade::Error("Tokenizer::decode: id " + std::to_string(id) + " outside [0, " + std::to_string(n) + ")");
    v.push_back(static_cast<int>(id));
  }
  char* out = nullptr;
  size_t len = 0;
  check(api_->decode(sp_.get(), v.data(), v.size(), &out, &len), "Tokenizer::decode");
  std::string s(out, len);
  api_->free_buf(out);
  return s;
}

int64_t SpmBackend::token_id(const std::string& piece_str) const {
    const int id = api_->piece_to_id(sp_.get(), piece_str.c_str());
  if (id == api_->special(sp_.get(), 0) && piece_str != piece(id))
    throw spade::Error("Tokenizer: piece '" + piece_str + "' is not in the vocabulary of " + path_);
  return id;
}

std::string SpmBackend::piece(int64_t id) const {
  if (id < 0 || id >= vocab_size()) throw spade::Error("Tokenizer::piece: id " + std::to_string(id) + " out of range");
  char* p = api_->id_to_piece(sp_.get(), static_cast<int>(id));
  std::string s(p);
  api_->free_buf(p);
  return s;
}

int64_t SpmBackend::bos_id() const { return api_->special(sp_.get(), 1); }
int64_t SpmBackend::eos_id() const { return api_->special(sp_.get(), 2); }
int64_t SpmBackend::pad_id() const { return api_->special(sp_.get(), 3); }
int64_t SpmBackend::vocab_size() const { return sp_ ? api_->piece_size(sp_.get()) : 0; }

}  // namespace spade::policy
