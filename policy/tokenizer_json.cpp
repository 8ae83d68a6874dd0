#include "policy/tokenizer_json.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <utility>
#include <vector>

#include "common/atomic_file.h"
#include "common/error.h"

namespace spade::policy::tokenizer_json {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// serde_json's default recursion limit (HF tokenizers reads tokenizer.json with serde_json).
constexpr int kMaxJsonDepth = 128;

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

// Throws when a value of `j` sits more than kMaxJsonDepth arrays/objects deep, naming the top-level
// key it is under. Iterative: nlohmann's dump() and copies recurse once per level, so a file nested
// 200000 deep would overflow the stack in the code that reads it.
void check_depth(const json& j, const std::string& where) {
  auto check = [&](const json& root, int root_depth, const std::string& key) {
    std::vector<std::pair<const json*, int>> stack{{&root, root_depth}};
    while (!stack.empty()) {
      const auto [v, depth] = stack.back();
      stack.pop_back();
      if (!v->is_structured()) continue;
      if (depth >= kMaxJsonDepth)
        throw spade::Error(where + ": JSON nested deeper than " + std::to_string(kMaxJsonDepth) + " levels" +
                           (key.empty() ? "" : " under \"" + key + "\"") +
                           " (HF's loader, serde_json, stops there too)");
      for (const json& child : *v) stack.emplace_back(&child, depth + 1);
    }
  };
  if (!j.is_object()) return check(j, 0, "");
  for (auto it = j.begin(); it != j.end(); ++it) check(it.value(), 1, it.key());
}

}  // namespace

json parse(const std::string& text, const std::string& where) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    throw spade::Error(where + ": invalid JSON: " + e.what());
  }
  check_depth(j, where);
  return j;
}

json read(const std::string& path) {
  if (!fs::exists(path)) throw spade::Error(path + ": tokenizer file does not exist");
  std::string text;
  try {
    text = spade::read_file(path, kMaxFileBytes);
  } catch (const std::exception& e) {
    throw spade::Error(path + ": cannot read: " + e.what());
  }
  return parse(text, path);
}

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

BpeModelParts parse_bpe_model(const json& j, const std::string& where) {
  if (!j.contains("model") || !j["model"].is_object()) throw spade::Error(where + ": missing object \"model\"");
  const json& m = j["model"];
  if (m.contains("type") && !(m["type"].is_string() && m["type"].get<std::string>() == "BPE"))
    throw spade::Error(where + ": model.type " + m["type"].dump() +
                       " is not supported (only \"BPE\"; for SentencePiece models load tokenizer.model)");
  if (!m.contains("vocab") || !m["vocab"].is_object()) throw spade::Error(where + ": missing object model.vocab");
  if (!m.contains("merges") || !m["merges"].is_array()) throw spade::Error(where + ": missing array model.merges");
  for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"})
    if (m.contains(key) && !m[key].is_null() && !(m[key].is_string() && m[key].get<std::string>().empty()))
      throw spade::Error(where + ": model." + key + " is not supported (neither byte-level nor SentencePiece-style BPE has one)");
  BpeModelParts parts;
  parts.vocab.reserve(m["vocab"].size());
  for (auto it = m["vocab"].begin(); it != m["vocab"].end(); ++it) {
    if (!it.value().is_number_integer())
      throw spade::Error(where + ": model.vocab[\"" + it.key() + "\"]: expected an integer id");
    parts.vocab.emplace(it.key(), it.value().get<int64_t>());
  }
  parts.merges.reserve(m["merges"].size());
  for (size_t i = 0; i < m["merges"].size(); ++i) {
    const json& e = m["merges"][i];
    const std::string at = where + ": model.merges[" + std::to_string(i) + "]";
    if (e.is_string()) {
      const std::string s = e.get<std::string>();
      const size_t sp = s.find(' ');
      if (sp == std::string::npos || sp == 0 || sp + 1 >= s.size() || s.find(' ', sp + 1) != std::string::npos)
        throw spade::Error(at + ": expected \"left right\" (two pieces and one space), got \"" + s + "\"");
      parts.merges.emplace_back(s.substr(0, sp), s.substr(sp + 1));
    } else if (e.is_array() && e.size() == 2 && e[0].is_string() && e[1].is_string()) {
      parts.merges.emplace_back(e[0].get<std::string>(), e[1].get<std::string>());
    } else {
      throw spade::Error(at + ": expected \"left right\" or [\"left\", \"right\"], got " + e.dump());
    }
  }
  if (m.contains("unk_token") && !m["unk_token"].is_null()) {
    if (!m["unk_token"].is_string()) throw spade::Error(where + ": model.unk_token: expected a string or null");
    auto it = parts.vocab.find(m["unk_token"].get<std::string>());
    if (it == parts.vocab.end())
      throw spade::Error(where + ": model.unk_token '" + m["unk_token"].get<std::string>() + "' is not in model.vocab");
    parts.unk_id = it->second;
  }
  return parts;
}

bool is_sentencepiece_style(const json& j) {
  if (!j.is_object()) return false;
  if (j.contains("model") && j["model"].is_object() && j["model"].contains("byte_fallback") &&
      j["model"]["byte_fallback"].is_boolean() && j["model"]["byte_fallback"].get<bool>())
    return true;
  for (const char* part : {"normalizer", "pre_tokenizer", "decoder"}) {
    if (!j.contains(part)) continue;
    const std::string text = j[part].dump();
    if (text.find(R"("type":"Metaspace")") != std::string::npos || text.find(R"("type":"Prepend")") != std::string::npos)
      return true;
  }
  return false;
}

BpeSpecialIds read_special_ids(const std::string& path, const std::function<int64_t(const std::string&)>& token_id) {
  const fs::path dir = fs::path(path).parent_path();
  BpeSpecialIds ids;
  const fs::path tc = dir / "tokenizer_config.json";
  if (fs::exists(tc)) {
    const json j = read(tc.string());
    auto resolve = [&](const char* key) -> int64_t {
      const std::string s = config_token(j, key, tc.string());
      if (s.empty()) return -1;
      try {
        return token_id(s);
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
    const json j = read(cfg.string());
    if (ids.bos < 0) ids.bos = config_id(j, "bos_token_id", cfg.string());
    if (ids.eos < 0) ids.eos = config_id(j, "eos_token_id", cfg.string());
    if (ids.pad < 0) ids.pad = config_id(j, "pad_token_id", cfg.string());
  }
  return ids;
}

}  // namespace spade::policy::tokenizer_json
