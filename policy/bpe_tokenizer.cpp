#include "policy/bpe_tokenizer.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <functional>

#include "common/error.h"
#include "policy/byte_level.h"
#include "policy/tokenizer_json.h"

namespace spade::policy {
using nlohmann::json;

namespace {

using tokenizer_json::get_bool;
using tokenizer_json::type_of;

void parse_normalizer(const json& j, const std::string& where, std::vector<UnicodeForm>& out) {
  if (j.is_null()) return;
  const std::string type = type_of(j, where);
  if (type == "Sequence") {
    if (!j.contains("normalizers") || !j["normalizers"].is_array())
      throw spade::Error(where + ".normalizers: expected an array");
    for (size_t i = 0; i < j["normalizers"].size(); ++i)
      parse_normalizer(j["normalizers"][i], where + ".normalizers[" + std::to_string(i) + "]", out);
    return;
  }
  out.push_back(parse_unicode_form(type, where));
}

}  // namespace

std::unique_ptr<BpeTokenizer> BpeTokenizer::from_json_text(const std::string& json_text, const std::string& where) {
  return from_json(tokenizer_json::parse(json_text, where), where);
}

std::unique_ptr<BpeTokenizer> BpeTokenizer::from_json(const json& j, const std::string& where) {
  if (!j.is_object()) throw spade::Error(where + ": expected a JSON object at the top level");
  auto t = std::make_unique<BpeTokenizer>();
  t->where_ = where;

  // --- model ---
  tokenizer_json::BpeModelParts parts = tokenizer_json::parse_bpe_model(j, where);
  const json& m = j["model"];
  if (get_bool(m, "byte_fallback", false, where + ": model"))
    throw spade::Error(where + ": model.byte_fallback = true is not supported by the byte-level BPE (a "
                       "SentencePiece-style tokenizer.json: Tokenizer::load reads it with SpBpeTokenizer)");
  t->model_ = std::make_unique<BpeModel>(std::move(parts.vocab), parts.merges,
                                         get_bool(m, "ignore_merges", false, where + ": model"), parts.unk_id, where);

  // --- normalizer ---
  if (j.contains("normalizer")) parse_normalizer(j["normalizer"], where + ": normalizer", t->normalizers_);

  // --- pre_tokenizer ---
  if (!j.contains("pre_tokenizer") || j["pre_tokenizer"].is_null())
    throw spade::Error(where + ": pre_tokenizer is null: not a byte-level BPE (expected ByteLevel, alone or in a Sequence)");
  bool byte_level_seen = false;
  std::function<void(const json&, const std::string&)> parse_pre = [&](const json& p, const std::string& at) {
    const std::string type = type_of(p, at);
    PreStep step;
    if (type == "Sequence") {
      if (!p.contains("pretokenizers") || !p["pretokenizers"].is_array())
        throw spade::Error(at + ".pretokenizers: expected an array");
      for (size_t i = 0; i < p["pretokenizers"].size(); ++i)
        parse_pre(p["pretokenizers"][i], at + ".pretokenizers[" + std::to_string(i) + "]");
      return;
    } else if (type == "Split") {
      if (!p.contains("pattern") || !p["pattern"].is_object())
        throw spade::Error(at + ".pattern: expected {\"Regex\": ...} or {\"String\": ...}");
      const json& pat = p["pattern"];
      const bool literal = pat.contains("String");
      const char* key = literal ? "String" : "Regex";
      if (!pat.contains(key) || !pat[key].is_string())
        throw spade::Error(at + ".pattern: expected {\"Regex\": ...} or {\"String\": ...}");
      if (!p.contains("behavior") || !p["behavior"].is_string()) throw spade::Error(at + ".behavior: expected a string");
      step.splitter = std::make_shared<RegexSplitter>(
          pat[key].get<std::string>(), parse_split_behavior(p["behavior"].get<std::string>(), at + ".behavior"),
          get_bool(p, "invert", false, at), literal, at + ".pattern");
    } else if (type == "Digits") {
      // HF pre_tokenizers/digits.rs: digits (char::is_numeric) isolated one by one, or runs kept together.
      step.splitter = std::make_shared<RegexSplitter>(
          "\\p{N}", get_bool(p, "individual_digits", false, at) ? SplitBehavior::kIsolated : SplitBehavior::kContiguous,
          false, false, at);
    } else if (type == "ByteLevel") {
      byte_level_seen = true;
      step.add_prefix_space = get_bool(p, "add_prefix_space", true, at);
      if (get_bool(p, "use_regex", true, at))
        step.splitter = std::make_shared<RegexSplitter>(kGpt2SplitRegex, SplitBehavior::kIsolated, false, false, at);
    } else {
      throw spade::Error(at + ": pre-tokenizer type '" + type +
                         "' is not supported (supported: Sequence, Split, Digits, ByteLevel)");
    }
    t->pre_steps_.push_back(std::move(step));
  };
  parse_pre(j["pre_tokenizer"], where + ": pre_tokenizer");
  if (!byte_level_seen)
    throw spade::Error(where + ": pre_tokenizer has no ByteLevel step: not a byte-level BPE tokenizer.json");

  // --- decoder ---
  if (j.contains("decoder") && !j["decoder"].is_null()) {
    const json& d = j["decoder"];
    const std::string type = type_of(d, where + ": decoder");
    bool ok = type == "ByteLevel";
    if (type == "Sequence" && d.contains("decoders") && d["decoders"].is_array() && !d["decoders"].empty()) {
      ok = true;
      for (const json& e : d["decoders"]) ok = ok && e.is_object() && e.value("type", "") == "ByteLevel";
    }
    if (!ok) throw spade::Error(where + ": decoder " + d.dump() + " is not supported (expected ByteLevel)");
  }

  // --- added_tokens ---
  t->added_ = AddedVocabulary(j.contains("added_tokens") ? j["added_tokens"] : json(), where + ": added_tokens",
                              t->model_->id_end() + BpeModel::kMaxIdGap);
  return t;
}

std::unique_ptr<BpeTokenizer> BpeTokenizer::load(const std::string& path) {
  return load(tokenizer_json::read(path), path);
}

std::unique_ptr<BpeTokenizer> BpeTokenizer::load(const json& j, const std::string& path) {
  auto t = from_json(j, path);
  t->set_special_ids(tokenizer_json::read_special_ids(path, [&](const std::string& s) { return t->token_id(s); }));
  return t;
}

std::vector<std::string> BpeTokenizer::pre_tokenize(const std::string& text) const {
  std::string s = text;
  for (UnicodeForm f : normalizers_) s = unicode_normalize(s, f);
  std::vector<std::string> pieces;
  if (!s.empty()) pieces.push_back(std::move(s));
  for (const PreStep& step : pre_steps_) {
    std::vector<std::string> next;
    next.reserve(pieces.size());
    for (std::string& p : pieces) {
      if (step.add_prefix_space && p[0] != ' ') p.insert(p.begin(), ' ');
      if (!step.splitter) {
        next.push_back(std::move(p));
        continue;
      }
      for (std::string& q : step.splitter->split(p)) next.push_back(std::move(q));
    }
    pieces = std::move(next);
  }
  return pieces;
}

std::vector<int64_t> BpeTokenizer::encode(const std::string& text, bool parse_special) const {
  return added_.encode(text, parse_special, [&](const std::string& segment, bool, std::vector<int64_t>& out) {
    for (const std::string& piece : pre_tokenize(segment)) model_->encode_word(piece, out);
  });
}

std::string BpeTokenizer::decode(const std::vector<int64_t>& ids) const {
  std::string out;
  for (int64_t id : ids) {
    if (const AddedToken* a = added_.token(id)) {
      // HF runs added tokens through the ByteLevel decoder too: characters of the byte-level alphabet
      // become their bytes ("Ġx>" -> " x>"), others stay as they are (tokenizers 0.23.2).
      out += byte_level::decode(a->content);
      continue;
    }
    const std::string* b = model_->bytes(id);
    if (!b)
      throw spade::Error("Tokenizer::decode: id " + std::to_string(id) + " is not a token of " + where_ +
                         " (vocab_size " + std::to_string(vocab_size()) + ")");
    out += *b;
  }
  return out;
}

int64_t BpeTokenizer::token_id(const std::string& piece_str) const {
  const int64_t a = added_.id_of(piece_str);
  if (a >= 0) return a;
  auto v = model_->vocab().find(piece_str);
  if (v != model_->vocab().end()) return v->second;
  throw spade::Error("Tokenizer: piece '" + piece_str + "' is not in the vocabulary or added_tokens of " + where_ +
                     " (vocabulary pieces are spelled in the byte-level alphabet: \" hi\" is \"\u0120hi\")");
}

std::string BpeTokenizer::piece(int64_t id) const {
  if (const AddedToken* a = added_.token(id)) return a->content;
  const std::string* p = model_->piece(id);
  if (!p) throw spade::Error("Tokenizer::piece: id " + std::to_string(id) + " is not a token of " + where_);
  return *p;
}

int64_t BpeTokenizer::vocab_size() const {
  return std::max(model_->id_end(), added_.id_end());
}

}  // namespace spade::policy
