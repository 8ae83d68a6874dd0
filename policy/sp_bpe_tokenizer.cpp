#include "policy/sp_bpe_tokenizer.h"

#include <nlohmann/json.hpp>

#include <algorithm>

#include "common/error.h"
#include "common/strings.h"

namespace spade::policy {
namespace {

using nlohmann::json;
using tokenizer_json::get_bool;
using tokenizer_json::type_of;

std::string get_string(const json& j, const char* key, const std::string& where) {
  if (!j.contains(key) || !j[key].is_string()) throw spade::Error(where + "." + key + ": expected a string");
  return j[key].get<std::string>();
}

}  // namespace

std::unique_ptr<SpBpeTokenizer> SpBpeTokenizer::from_json_text(const std::string& json_text, const std::string& where) {
  return from_json(tokenizer_json::parse(json_text, where), where);
}

std::unique_ptr<SpBpeTokenizer> SpBpeTokenizer::from_json(const json& j, const std::string& where) {
  if (!j.is_object()) throw spade::Error(where + ": expected a JSON object at the top level");
  tokenizer_json::BpeModelParts parts = tokenizer_json::parse_bpe_model(j, where);
  const json& m = j["model"];
  SpBpeModel::Options o;
  o.byte_fallback = get_bool(m, "byte_fallback", false, where + ": model");
  o.fuse_unk = get_bool(m, "fuse_unk", false, where + ": model");
  o.ignore_merges = get_bool(m, "ignore_merges", false, where + ": model");
  std::unique_ptr<SpBpeTokenizer> t(new SpBpeTokenizer(std::make_unique<SpBpeModel>(std::move(parts), o, where)));
  t->where_ = where;
  if (j.contains("normalizer")) t->parse_normalizer(j["normalizer"], where + ": normalizer");
  if (j.contains("pre_tokenizer")) t->parse_pre_tokenizer(j["pre_tokenizer"], where + ": pre_tokenizer");
  t->decoder_ = SpDecoder(j.contains("decoder") ? j["decoder"] : json(), where + ": decoder");
  t->added_ = AddedVocabulary(j.contains("added_tokens") ? j["added_tokens"] : json(), where + ": added_tokens",
                              t->model_->model().id_end() + BpeModel::kMaxIdGap);
  return t;
}

std::unique_ptr<SpBpeTokenizer> SpBpeTokenizer::load(const json& j, const std::string& path) {
  auto t = from_json(j, path);
  t->set_special_ids(tokenizer_json::read_special_ids(path, [&](const std::string& s) { return t->token_id(s); }));
  return t;
}

void SpBpeTokenizer::parse_normalizer(const json& j, const std::string& where) {
  if (j.is_null()) return;
  const std::string type = type_of(j, where);
  NormStep s;
  if (type == "Sequence") {
    if (!j.contains("normalizers") || !j["normalizers"].is_array())
      throw spade::Error(where + ".normalizers: expected an array");
    for (size_t i = 0; i < j["normalizers"].size(); ++i)
      parse_normalizer(j["normalizers"][i], where + ".normalizers[" + std::to_string(i) + "]");
    return;
  } else if (type == "Prepend") {
    s.kind = NormStep::kPrepend;
    s.a = get_string(j, "prepend", where);
  } else if (type == "Replace") {
    if (!j.contains("pattern") || !j["pattern"].is_object() || !j["pattern"].contains("String") ||
        !j["pattern"]["String"].is_string())
      throw spade::Error(where + ".pattern: only {\"String\": ...} patterns are supported in a Replace normalizer");
    s.kind = NormStep::kReplace;
    s.a = j["pattern"]["String"].get<std::string>();
    s.b = get_string(j, "content", where);
    if (s.a.empty()) throw spade::Error(where + ".pattern.String: expected a non-empty string");
  } else if (type == "NFC" || type == "NFD" || type == "NFKC" || type == "NFKD") {
    s.form = parse_unicode_form(type, where);
  } else {
    throw spade::Error(where + ": normalizer type '" + type + "' is not supported in a SentencePiece-style "
                       "tokenizer.json (supported: Sequence, Prepend, Replace with a String pattern, NFC, NFD, NFKC, NFKD)");
  }
  normalizers_.push_back(std::move(s));
}

void SpBpeTokenizer::parse_pre_tokenizer(const json& j, const std::string& where) {
  if (j.is_null()) return;
  const std::string type = type_of(j, where);
  PreStep step;
  if (type == "Sequence") {
    if (!j.contains("pretokenizers") || !j["pretokenizers"].is_array())
      throw spade::Error(where + ".pretokenizers: expected an array");
    for (size_t i = 0; i < j["pretokenizers"].size(); ++i)
      parse_pre_tokenizer(j["pretokenizers"][i], where + ".pretokenizers[" + std::to_string(i) + "]");
    return;
  } else if (type == "Split") {
    const json* pat = j.contains("pattern") && j["pattern"].is_object() ? &j["pattern"] : nullptr;
    const bool literal = pat && pat->contains("String");
    const char* key = literal ? "String" : "Regex";
    if (!pat || !pat->contains(key) || !(*pat)[key].is_string())
      throw spade::Error(where + ".pattern: expected {\"Regex\": ...} or {\"String\": ...}");
    step.splitter = std::make_shared<RegexSplitter>(
        (*pat)[key].get<std::string>(), parse_split_behavior(get_string(j, "behavior", where), where + ".behavior"),
        get_bool(j, "invert", false, where), literal, where + ".pattern");
  } else if (type == "Metaspace") {
    if (j.contains("replacement")) step.replacement = get_string(j, "replacement", where);
    if (step.replacement.empty()) throw spade::Error(where + ".replacement: expected one character");
    if (j.contains("prepend_scheme") && !j["prepend_scheme"].is_null()) {
      const std::string scheme = get_string(j, "prepend_scheme", where);
      if (scheme == "always") step.prepend = Prepend::kAlways;
      else if (scheme == "first") step.prepend = Prepend::kFirst;
      else if (scheme == "never") step.prepend = Prepend::kNever;
      else throw spade::Error(where + ".prepend_scheme: '" + scheme + "' is not one of always, first, never");
    } else {
      step.prepend = get_bool(j, "add_prefix_space", true, where) ? Prepend::kAlways : Prepend::kNever;
    }
    step.split = get_bool(j, "split", true, where);
  } else {
    throw spade::Error(where + ": pre-tokenizer type '" + type + "' is not supported in a SentencePiece-style "
                       "tokenizer.json (supported: null, Metaspace, Split, Sequence of these)" +
                       (type == "ByteLevel" ? "; a ByteLevel tokenizer.json is a byte-level BPE" : ""));
  }
  pre_steps_.push_back(std::move(step));
}

std::vector<std::string> SpBpeTokenizer::pre_tokenize(const std::string& segment, bool starts_text) const {
  std::string s = segment;
  for (const NormStep& n : normalizers_) {
    switch (n.kind) {
      case NormStep::kUnicode: s = unicode_normalize(s, n.form); break;
      case NormStep::kPrepend: if (!s.empty()) s = n.a + s; break;
      case NormStep::kReplace: s = replace_all(s, n.a, n.b); break;
    }
  }
  std::vector<std::string> words;
  if (s.empty()) return words;
  words.push_back(std::move(s));
  for (const PreStep& step : pre_steps_) {
    std::vector<std::string> next;
    for (size_t w = 0; w < words.size(); ++w) {
      std::string& word = words[w];
      const bool first = starts_text && w == 0;  // HF: the word's offset in the original text is 0
      if (step.splitter) {
        for (std::string& q : step.splitter->split(word)) next.push_back(std::move(q));
        continue;
      }
      const std::string& r = step.replacement;
      word = replace_all(word, " ", r);
      const bool prepend = step.prepend == Prepend::kAlways || (step.prepend == Prepend::kFirst && first);
      if (prepend && !word.empty() && word.compare(0, r.size(), r) != 0) word = r + word;
      if (!step.split) {
        if (!word.empty()) next.push_back(std::move(word));
        continue;
      }
      // Cut before every replacement character (it starts the next word: MergedWithNext).
      size_t begin = 0;
      for (size_t p = word.find(r, 1); p != std::string::npos; p = word.find(r, p + r.size())) {
        if (p > begin) next.push_back(word.substr(begin, p - begin));
        begin = p;
      }
      if (begin < word.size()) next.push_back(word.substr(begin));
    }
    words = std::move(next);
  }
  return words;
}

std::vector<int64_t> SpBpeTokenizer::encode(const std::string& text, bool parse_special) const {
  return added_.encode(text, parse_special, [&](const std::string& segment, bool first, std::vector<int64_t>& out) {
    for (const std::string& word : pre_tokenize(segment, first)) model_->encode(word, out);
  });
}

std::string SpBpeTokenizer::decode(const std::vector<int64_t>& ids) const {
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (int64_t id : ids) tokens.push_back(piece(id));
  return decoder_.decode(std::move(tokens));
}

int64_t SpBpeTokenizer::token_id(const std::string& piece_str) const {
  const int64_t a = added_.id_of(piece_str);
  if (a >= 0) return a;
  const int64_t v = model_->model().find(piece_str);
  if (v >= 0) return v;
  throw spade::Error("Tokenizer: piece '" + piece_str + "' is not in the vocabulary or added_tokens of " + where_ +
                     " (SentencePiece-style pieces spell a space as \"\u2581\": \" hi\" is \"\u2581hi\")");
}

std::string SpBpeTokenizer::piece(int64_t id) const {
  if (const AddedToken* a = added_.token(id)) return a->content;
  const std::string* p = model_->model().piece(id);
  if (!p)
    throw spade::Error("Tokenizer: id " + std::to_string(id) + " is not a token of " + where_ + " (vocab_size " +
                       std::to_string(vocab_size()) + ")");
  return *p;
}

int64_t SpBpeTokenizer::vocab_size() const { return std::max(model_->model().id_end(), added_.id_end()); }

}  // namespace spade::policy
