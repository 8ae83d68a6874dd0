#include "policy/bpe_tokenizer.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <functional>
#include <filesystem>
#include <limits>

#include "common/atomic_file.h"
#include "common/error.h"
#include "policy/byte_level.h"

namespace spade::policy {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::string type_of(const json& j, const std::string& where) {
  if (!j.is_object() || !j.contains("type") || !j["type"].is_string())
    throw spade::Error(where + ": expected an object with a string \"type\"");
  return j["type"].get<std::string>();
}

bool get_bool(const json& j, const char* key, bool fallback, const std::string& where) {
  if (!j.contains(key) || j[key].is_null()) return fallback;
  if (!j[key].is_boolean()) throw spade::Error(where + "." + key + ": expected true or false");
  return j[key].get<bool>();
}

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

bool is_word_byte(unsigned char c) { return std::isalnum(c) || c == '_'; }
bool is_ascii_space(unsigned char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

// tokenizer_config.json "bos_token" etc.: a string, {"content": ...}, or null/absent ("").
std::string config_token(const json& j, const char* key, const std::string& where) {
  if (!j.contains(key) || j[key].is_null()) return "";
  if (j[key].is_string()) return j[key].get<std::string>();
  if (j[key].is_object() && j[key].contains("content") && j[key]["content"].is_string())
    return j[key]["content"].get<std::string>();
  throw spade::Error(where + ": \"" + key + "\" must be a string, an object with \"content\", or null");
}

// config.json "eos_token_id" etc.: an int, a list of ints (first used), or null/absent (-1).
int64_t config_id(const json& j, const char* key, const std::string& where) {
  if (!j.contains(key) || j[key].is_null()) return -1;
  const json& v = j[key];
  if (v.is_number_integer()) return v.get<int64_t>();
  if (v.is_array() && !v.empty() && v[0].is_number_integer()) return v[0].get<int64_t>();
  if (v.is_array() && v.empty()) return -1;
  throw spade::Error(where + ": \"" + key + "\" must be an integer or a list of integers");
}

json read_json(const std::string& path) {
  try {
    return json::parse(spade::read_file(path));
  } catch (const json::exception& e) {
    throw spade::Error(path + ": invalid JSON: " + e.what());
  }
}

}  // namespace

std::unique_ptr<BpeTokenizer> BpeTokenizer::from_json_text(const std::string& json_text, const std::string& where) {
  json j;
  try {
    j = json::parse(json_text);
  } catch (const json::exception& e) {
    throw spade::Error(where + ": invalid JSON: " + e.what());
  }
  if (!j.is_object()) throw spade::Error(where + ": expected a JSON object at the top level");
  auto t = std::make_unique<BpeTokenizer>();
  t->where_ = where;

  // --- model ---
  if (!j.contains("model") || !j["model"].is_object()) throw spade::Error(where + ": missing object \"model\"");
  const json& m = j["model"];
  if (m.contains("type") && !(m["type"].is_string() && m["type"].get<std::string>() == "BPE"))
    throw spade::Error(where + ": model.type " + m["type"].dump() +
                       " is not supported (only \"BPE\"; for SentencePiece models load tokenizer.model)");
  if (!m.contains("vocab") || !m["vocab"].is_object()) throw spade::Error(where + ": missing object model.vocab");
  if (!m.contains("merges") || !m["merges"].is_array()) throw spade::Error(where + ": missing array model.merges");
  for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"})
    if (m.contains(key) && !m[key].is_null() && !(m[key].is_string() && m[key].get<std::string>().empty()))
      throw spade::Error(where + ": model." + key + " is not supported (byte-level BPE has none)");
  if (get_bool(m, "byte_fallback", false, where + ": model"))
    throw spade::Error(where + ": model.byte_fallback = true is not supported (a SentencePiece-style BPE; load its "
                       "tokenizer.model instead)");
  std::unordered_map<std::string, int64_t> vocab;
  vocab.reserve(m["vocab"].size());
  for (auto it = m["vocab"].begin(); it != m["vocab"].end(); ++it) {
    if (!it.value().is_number_integer())
      throw spade::Error(where + ": model.vocab[\"" + it.key() + "\"]: expected an integer id");
    vocab.emplace(it.key(), it.value().get<int64_t>());
  }
  std::vector<std::pair<std::string, std::string>> merges;
  merges.reserve(m["merges"].size());
  for (size_t i = 0; i < m["merges"].size(); ++i) {
    const json& e = m["merges"][i];
    const std::string at = where + ": model.merges[" + std::to_string(i) + "]";
    if (e.is_string()) {
      const std::string s = e.get<std::string>();
      const size_t sp = s.find(' ');
      if (sp == std::string::npos || sp == 0 || sp + 1 >= s.size() || s.find(' ', sp + 1) != std::string::npos)
        throw spade::Error(at + ": expected \"left right\" (two pieces and one space), got \"" + s + "\"");
      merges.emplace_back(s.substr(0, sp), s.substr(sp + 1));
    } else if (e.is_array() && e.size() == 2 && e[0].is_string() && e[1].is_string()) {
      merges.emplace_back(e[0].get<std::string>(), e[1].get<std::string>());
    } else {
      throw spade::Error(at + ": expected \"left right\" or [\"left\", \"right\"], got " + e.dump());
    }
  }
  int64_t unk = -1;
  if (m.contains("unk_token") && !m["unk_token"].is_null()) {
    if (!m["unk_token"].is_string()) throw spade::Error(where + ": model.unk_token: expected a string or null");
    auto it = vocab.find(m["unk_token"].get<std::string>());
    if (it == vocab.end())
      throw spade::Error(where + ": model.unk_token '" + m["unk_token"].get<std::string>() + "' is not in model.vocab");
    unk = it->second;
  }
  t->model_ = std::make_unique<BpeModel>(std::move(vocab), merges, get_bool(m, "ignore_merges", false, where + ": model"),
                                         unk, where);

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
  if (j.contains("added_tokens") && !j["added_tokens"].is_null()) {
    if (!j["added_tokens"].is_array()) throw spade::Error(where + ": added_tokens: expected an array");
    for (size_t i = 0; i < j["added_tokens"].size(); ++i) {
      const json& a = j["added_tokens"][i];
      const std::string at = where + ": added_tokens[" + std::to_string(i) + "]";
      if (!a.is_object() || !a.contains("id") || !a["id"].is_number_integer() || a["id"].get<int64_t>() < 0)
        throw spade::Error(at + ": missing non-negative integer \"id\"");
      if (!a.contains("content") || !a["content"].is_string() || a["content"].get<std::string>().empty())
        throw spade::Error(at + ": missing non-empty string \"content\"");
      AddedToken tok;
      tok.id = a["id"].get<int64_t>();
      tok.content = a["content"].get<std::string>();
      tok.special = get_bool(a, "special", false, at);
      tok.lstrip = get_bool(a, "lstrip", false, at);
      tok.rstrip = get_bool(a, "rstrip", false, at);
      tok.single_word = get_bool(a, "single_word", false, at);
      t->added_by_content_[tok.content] = tok.id;
      t->added_by_id_[tok.id] = t->added_.size();
      t->added_.push_back(std::move(tok));
    }
  }
  return t;
}

std::unique_ptr<BpeTokenizer> BpeTokenizer::load(const std::string& path) {
  if (!fs::exists(path)) throw spade::Error(path + ": tokenizer file does not exist");
  std::string text;
  try {
    text = spade::read_file(path);
  } catch (const std::exception& e) {
    throw spade::Error(path + ": cannot read: " + e.what());
  }
  auto t = from_json_text(text, path);
  const fs::path dir = fs::path(path).parent_path();
  BpeSpecialIds ids;
  const fs::path tc = dir / "tokenizer_config.json";
  if (fs::exists(tc)) {
    const json j = read_json(tc.string());
    auto resolve = [&](const char* key) -> int64_t {
      const std::string s = config_token(j, key, tc.string());
      if (s.empty()) return -1;
      try {
        return t->token_id(s);
      } catch (const spade::Error&) {
        throw spade::Error(tc.string() + ": \"" + key + "\" '" + s + "' is not a token of " + path);
      }
    };
    ids.bos = resolve("bos_token");
    ids.eos = resolve("eos_token");
    ids.pad = resolve("pad_token");
  }
  const fs::path cfg = dir / "config.json";
  if (fs::exists(cfg) && (ids.bos < 0 || ids.eos < 0 || ids.pad < 0)) {
    const json j = read_json(cfg.string());
    if (ids.bos < 0) ids.bos = config_id(j, "bos_token_id", cfg.string());
    if (ids.eos < 0) ids.eos = config_id(j, "eos_token_id", cfg.string());
    if (ids.pad < 0) ids.pad = config_id(j, "pad_token_id", cfg.string());
  }
  t->set_special_ids(ids);
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

std::vector<BpeTokenizer::Segment> BpeTokenizer::split_added(const std::string& text, bool parse_special) const {
  std::vector<Segment> out;
  std::vector<const AddedToken*> cands;
  for (const AddedToken& a : added_)
    if (parse_special || !a.special) cands.push_back(&a);
  std::vector<size_t> next(cands.size(), 0);  // next occurrence at or after `pos` (npos: none)
  for (size_t i = 0; i < cands.size(); ++i) next[i] = text.find(cands[i]->content);
  size_t pos = 0;
  while (pos < text.size()) {
    size_t best = std::string::npos;
    const AddedToken* tok = nullptr;
    for (size_t i = 0; i < cands.size(); ++i) {
      while (next[i] != std::string::npos) {
        if (next[i] < pos) {
          next[i] = text.find(cands[i]->content, pos);
          continue;
        }
        const AddedToken& a = *cands[i];
        if (a.single_word) {
          const size_t e = next[i] + a.content.size();
          const bool left_ok = next[i] == 0 || !is_word_byte(text[next[i] - 1]);
          const bool right_ok = e >= text.size() || !is_word_byte(text[e]);
          if (!left_ok || !right_ok) {
            next[i] = text.find(a.content, next[i] + 1);
            continue;
          }
        }
        break;
      }
      if (next[i] == std::string::npos) continue;
      if (next[i] < best || (next[i] == best && cands[i]->content.size() > tok->content.size())) {
        best = next[i];
        tok = cands[i];
      }
    }
    if (!tok) break;
    size_t b = best, e = best + tok->content.size();
    if (tok->lstrip)
      while (b > pos && is_ascii_space(text[b - 1])) --b;
    if (tok->rstrip)
      while (e < text.size() && is_ascii_space(text[e])) ++e;
    if (b > pos) out.push_back({pos, b, -1});
    out.push_back({b, e, tok->id});
    pos = e;
  }
  if (pos < text.size()) out.push_back({pos, text.size(), -1});
  return out;
}

std::vector<int64_t> BpeTokenizer::encode(const std::string& text, bool parse_special) const {
  std::vector<int64_t> out;
  out.reserve(text.size() / 3 + 1);
  for (const Segment& seg : split_added(text, parse_special)) {
    if (seg.added_id >= 0) {
      out.push_back(seg.added_id);
      continue;
    }
    for (const std::string& piece : pre_tokenize(text.substr(seg.begin, seg.end - seg.begin)))
      model_->encode_word(piece, out);
  }
  return out;
}

std::string BpeTokenizer::decode(const std::vector<int64_t>& ids) const {
  std::string out;
  for (int64_t id : ids) {
    auto a = added_by_id_.find(id);
    if (a != added_by_id_.end()) {
      out += added_[a->second].content;
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
  auto a = added_by_content_.find(piece_str);
  if (a != added_by_content_.end()) return a->second;
  auto v = model_->vocab().find(piece_str);
  if (v != model_->vocab().end()) return v->second;
  throw spade::Error("Tokenizer: piece '" + piece_str + "' is not in the vocabulary or added_tokens of " + where_ +
                     " (vocabulary pieces are spelled in the byte-level alphabet: \" hi\" is \"\u0120hi\")");
}

std::string BpeTokenizer::piece(int64_t id) const {
  auto a = added_by_id_.find(id);
  if (a != added_by_id_.end()) return added_[a->second].content;
  const std::string* p = model_->piece(id);
  if (!p) throw spade::Error("Tokenizer::piece: id " + std::to_string(id) + " is not a token of " + where_);
  return *p;
}

int64_t BpeTokenizer::vocab_size() const {
  int64_t n = model_->id_end();
  for (const AddedToken& a : added_) n = std::max(n, a.id + 1);
  return n;
}

}  // namespace spade::policy
