#include "policy/sp_decoder.h"

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/strings.h"
#include "policy/byte_level.h"
#include "policy/tokenizer_json.h"

namespace spade::policy {
namespace {

using nlohmann::json;

std::string get_string(const json& j, const char* key, const std::string& where) {
  if (!j.contains(key) || !j[key].is_string()) throw spade::Error(where + "." + key + ": expected a string");
  return j[key].get<std::string>();
}

size_t get_count(const json& j, const char* key, const std::string& where) {
  if (!j.contains(key) || !j[key].is_number_integer() || j[key].get<int64_t>() < 0)
    throw spade::Error(where + "." + key + ": expected a non-negative integer");
  return static_cast<size_t>(j[key].get<int64_t>());
}

// The UTF-8 characters of `s` (invalid bytes one by one).
std::vector<std::string> chars_of(const std::string& s) {
  std::vector<std::string> out;
  for (size_t i = 0; i < s.size();) {
    int32_t cp;
    const size_t n = static_cast<size_t>(byte_level::utf8_next(s, i, cp));
    out.push_back(s.substr(i, n));
    i += n;
  }
  return out;
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// The byte of a token "<0xXX>", or -1.
int byte_token(const std::string& t) {
  if (t.size() != 6 || t.compare(0, 3, "<0x") != 0 || t[5] != '>') return -1;
  const int hi = hex_digit(t[3]), lo = hex_digit(t[4]);
  return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
}

bool valid_utf8(const std::string& s) {
  for (size_t i = 0; i < s.size();) {
    int32_t cp;
    i += static_cast<size_t>(byte_level::utf8_next(s, i, cp));
    if (cp < 0) return false;
  }
  return true;
}

}  // namespace

SpDecoder::SpDecoder(const json& d, const std::string& where) {
  if (d.is_null()) {
    null_ = true;
    return;
  }
  parse(d, where);
}

void SpDecoder::parse(const json& d, const std::string& where) {
  const std::string type = tokenizer_json::type_of(d, where);
  Step s;
  if (type == "Sequence") {
    if (!d.contains("decoders") || !d["decoders"].is_array()) throw spade::Error(where + ".decoders: expected an array");
    for (size_t i = 0; i < d["decoders"].size(); ++i) parse(d["decoders"][i], where + ".decoders[" + std::to_string(i) + "]");
    return;
  } else if (type == "Replace") {
    if (!d.contains("pattern") || !d["pattern"].is_object() || !d["pattern"].contains("String") ||
        !d["pattern"]["String"].is_string())
      throw spade::Error(where + ".pattern: only {\"String\": ...} patterns are supported in a Replace decoder");
    s.kind = Step::kReplace;
    s.from = d["pattern"]["String"].get<std::string>();
    s.to = get_string(d, "content", where);
  } else if (type == "ByteFallback") {
    s.kind = Step::kByteFallback;
  } else if (type == "Fuse") {
    s.kind = Step::kFuse;
  } else if (type == "Strip") {
    s.kind = Step::kStrip;
    s.from = get_string(d, "content", where);
    if (chars_of(s.from).size() != 1) throw spade::Error(where + ".content: expected one character");
    s.start = get_count(d, "start", where);
    s.stop = get_count(d, "stop", where);
  } else if (type == "Metaspace") {
    s.kind = Step::kMetaspace;
    s.from = d.contains("replacement") ? get_string(d, "replacement", where) : "\u2581";
    if (chars_of(s.from).size() != 1) throw spade::Error(where + ".replacement: expected one character");
    if (d.contains("prepend_scheme") && !d["prepend_scheme"].is_null()) {
      const std::string scheme = get_string(d, "prepend_scheme", where);
      if (scheme != "always" && scheme != "first" && scheme != "never")
        throw spade::Error(where + ".prepend_scheme: '" + scheme + "' is not one of always, first, never");
      s.drop_first = scheme != "never";
    } else {
      s.drop_first = tokenizer_json::get_bool(d, "add_prefix_space", true, where);
    }
  } else {
    throw spade::Error(where + ": decoder type '" + type + "' is not supported in a SentencePiece-style tokenizer.json "
                       "(supported: Sequence, Replace, ByteFallback, Fuse, Strip, Metaspace)");
  }
  steps_.push_back(std::move(s));
}

std::string SpDecoder::decode(std::vector<std::string> tokens) const {
  if (null_) {
    std::string out;
    for (size_t i = 0; i < tokens.size(); ++i) out += (i ? " " : "") + tokens[i];
    return out;
  }
  for (const Step& s : steps_) {
    switch (s.kind) {
      case Step::kReplace:
        for (std::string& t : tokens) t = replace_all(t, s.from, s.to);
        break;
      case Step::kByteFallback: {
        std::vector<std::string> next;
        std::string run;  // bytes of the current run of byte tokens
        auto flush = [&] {
          if (run.empty()) return;
          if (valid_utf8(run)) next.push_back(run);
          else next.insert(next.end(), run.size(), "\uFFFD");
          run.clear();
        };
        for (std::string& t : tokens) {
          const int b = byte_token(t);
          if (b >= 0) {
            run.push_back(static_cast<char>(b));
          } else {
            flush();
            next.push_back(std::move(t));
          }
        }
        flush();
        tokens = std::move(next);
        break;
      }
      case Step::kFuse: {
        std::string all;
        for (const std::string& t : tokens) all += t;
        tokens.assign(1, all);
        break;
      }
      case Step::kStrip:
        for (std::string& t : tokens) {
          const std::vector<std::string> cs = chars_of(t);
          size_t b = 0, e = cs.size();
          while (b < s.start && b < e && cs[b] == s.from) ++b;
          while (cs.size() - e < s.stop && e > b && cs[e - 1] == s.from) --e;
          std::string out;
          for (size_t i = b; i < e; ++i) out += cs[i];
          t = std::move(out);
        }
        break;
      case Step::kMetaspace:
        for (size_t i = 0; i < tokens.size(); ++i)
          tokens[i] = replace_all(tokens[i], s.from, i == 0 && s.drop_first ? "" : " ");
        break;
    }
  }
  std::string out;
  for (const std::string& t : tokens) out += t;
  return out;
}

}  // namespace spade::policy
