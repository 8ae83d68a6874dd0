#include "policy/added_tokens.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>

#include "common/error.h"
#include "policy/tokenizer_json.h"

namespace spade::policy {
namespace {

bool is_word_byte(unsigned char c) { return std::isalnum(c) || c == '_'; }
bool is_ascii_space(unsigned char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

}  // namespace

AddedVocabulary::AddedVocabulary(const nlohmann::json& j, const std::string& where) {
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
    tok.content = a["content"].get<std::string>();
    tok.special = tokenizer_json::get_bool(a, "special", false, at);
    tok.lstrip = tokenizer_json::get_bool(a, "lstrip", false, at);
    tok.rstrip = tokenizer_json::get_bool(a, "rstrip", false, at);
    tok.single_word = tokenizer_json::get_bool(a, "single_word", false, at);
    by_content_[tok.content] = tok.id;
    by_id_[tok.id] = tokens_.size();
    tokens_.push_back(std::move(tok));
  }
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
  std::vector<Segment> out;
  std::vector<const AddedToken*> cands;
  for (const AddedToken& a : tokens_)
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

}  // namespace spade::policy
