#include "policy/added_tokens.h"

#include <nlohmann/json.hpp>

#include <unicode/uchar.h>

#include <algorithm>

#include "common/error.h"
#include "policy/byte_level.h"
#include "policy/tokenizer_json.h"

namespace spade::policy {
namespace {

// HF's classes (added_vocabulary.rs, Rust regex crate, Unicode mode): lstrip / rstrip absorb \s (the
// White_Space property); single_word refuses a neighbour matching \w (UTS #18 word characters:
// Alphabetic, marks Mn/Mc/Me, decimal digits Nd, connector punctuation Pc such as '_', Join_Control).
// Invalid UTF-8 bytes (cp < 0) are neither.
bool is_space(int32_t cp) { return cp >= 0 && u_isUWhiteSpace(cp); }
bool is_word(int32_t cp) {
  if (cp < 0) return false;
  if (u_hasBinaryProperty(cp, UCHAR_ALPHABETIC) || u_hasBinaryProperty(cp, UCHAR_JOIN_CONTROL)) return true;
  const int8_t t = u_charType(cp);
  return t == U_NON_SPACING_MARK || t == U_COMBINING_SPACING_MARK || t == U_ENCLOSING_MARK ||
         t == U_DECIMAL_DIGIT_NUMBER || t == U_CONNECTOR_PUNCTUATION;
}

// The character of `s` ending at byte `end` > 0: its code point (-1: an invalid byte) and byte length.
int32_t char_before(const std::string& s, size_t end, size_t& len) {
  size_t b = end - 1;
  while (b > 0 && end - b < 4 && (static_cast<unsigned char>(s[b]) & 0xC0) == 0x80) --b;
  int32_t cp;
  const size_t n = static_cast<size_t>(byte_level::utf8_next(s, b, cp));
  if (b + n != end) {
    len = 1;
    return -1;
  }
  len = n;
  return cp;
}

// The character of `s` starting at byte `pos` < s.size(): its code point (-1: invalid) and byte length.
int32_t char_at(const std::string& s, size_t pos, size_t& len) {
  int32_t cp;
  len = static_cast<size_t>(byte_level::utf8_next(s, pos, cp));
  return cp;
}

}  // namespace

AddedVocabulary::AddedVocabulary(const nlohmann::json& j, const std::string& where, int64_t max_id) {
  if (j.is_null()) return;
  if (!j.is_array()) throw spade::Error(where + ": expected an array");
  for (size_t i = 0; i < j.size(); ++i) {
    const nlohmann::json& a = j[i];
    const std::string at = where + "[" + std::to_string(i) + "]";
    if (!a.is_object() || !a.contains("id") || !a["id"].is_number_integer() || a["id"].get<int64_t>() < 0)
      throw spade::Error(at + ": missing non-negative integer \"id\"");
    if (!a.contains("content") || !a["content"].is_string() || a["content"].get<std::string>().empty())
      throw spade::Error(at + ": missing non-empty string \"content\"");
    AddedToken tok;
    tok.id = a["id"].get<int64_t>();
    if (tok.id > max_id)
      throw spade::Error(at + ": id " + std::to_string(tok.id) + " is out of range (0.." + std::to_string(max_id) +
                         ": the vocabulary's ids + 2^20)");
    tok.content = a["content"].get<std::string>();
    tok.special = tokenizer_json::get_bool(a, "special", false, at);
    tok.lstrip = tokenizer_json::get_bool(a, "lstrip", false, at);
    tok.rstrip = tokenizer_json::get_bool(a, "rstrip", false, at);
    tok.single_word = tokenizer_json::get_bool(a, "single_word", false, at);
    by_content_.emplace(tok.content, tok.id);  // a repeated content keeps its first id, as the matcher
    by_id_[tok.id] = tokens_.size();
    const auto index = static_cast<int32_t>(tokens_.size());
    all_.add(tok.content, index);
    if (!tok.special) non_special_.add(tok.content, index);
    tokens_.push_back(std::move(tok));
  }
  all_.build();
  non_special_.build();
}

int64_t AddedVocabulary::id_of(const std::string& content) const {
  auto it = by_content_.find(content);
  return it == by_content_.end() ? -1 : it->second;
}

const AddedToken* AddedVocabulary::token(int64_t id) const {
  auto it = by_id_.find(id);
  return it == by_id_.end() ? nullptr : &tokens_[it->second];
}

int64_t AddedVocabulary::id_end() const {
  int64_t n = 0;
  for (const AddedToken& a : tokens_) n = std::max(n, a.id + 1);
  return n;
}

std::vector<AddedVocabulary::Segment> AddedVocabulary::split(const std::string& text, bool parse_special) const {
  const ByteTrie& trie = parse_special ? all_ : non_special_;
  std::vector<Segment> out;
  size_t pos = 0;   // end of the last segment (HF's start_offset)
  size_t scan = 0;  // where the search goes on: the end of the last match itself, kept or discarded
  while (scan < text.size() && !trie.empty()) {
    const ByteTrie::Match m = trie.find(text, scan);
    if (m.value < 0) break;
    const AddedToken& tok = tokens_[static_cast<size_t>(m.value)];
    size_t b = m.start, e = m.start + m.length, n;
    scan = e;
    if (tok.single_word) {
      const bool left_ok = b == 0 || !is_word(char_before(text, b, n));
      const bool right_ok = e >= text.size() || !is_word(char_at(text, e, n));
      if (!left_ok || !right_ok) continue;  // discarded: its bytes stay in the ordinary text
    }
    // lstrip takes the whitespace before the token, but not into the previous segment; rstrip takes
    // the whitespace after it, and the search still goes on at the token's own end: a token inside that
    // whitespace is found too and keeps its start, so the two segments overlap (HF's find_matches:
    // "<b>  " with rstrip "<b>" and an added "  " is [<b>, "  "]). HF clamps an lstrip start to the
    // previous segment's end even past the token's own start; only the id of an added segment is used,
    // so the clamp here stops at the token's start instead (same ids, and begin <= end).
    if (tok.lstrip) {
      const size_t floor = std::min(pos, m.start);
      while (b > floor && is_space(char_before(text, b, n)) && b - n >= floor) b -= n;
    }
    if (tok.rstrip)
      while (e < text.size() && is_space(char_at(text, e, n))) e += n;
    if (b > pos) out.push_back({pos, b, -1});
    out.push_back({b, e, tok.id});
    pos = e;
  }
  if (pos < text.size()) out.push_back({pos, text.size(), -1});
  return out;
}

}  // namespace spade::policy
