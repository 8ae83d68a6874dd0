#include "trainer/formula_text.h"

#include <cstring>

namespace spade::trainer {

namespace {

bool word_char(char c) {
  return c == '_' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}
bool digit(char c) { return c >= '0' && c <= '9'; }
bool blank(char c) { return c == ' ' || c == '\t'; }

// Length of the arithmetic operator starting at s[i], 0 when there is none.
size_t operator_at(const std::string& s, size_t i) {
  if (std::strchr("+-*/^%", s[i]) != nullptr && s[i] != '\0') return 1;
  for (const char* op : {"\xC3\x97", "\xC3\xB7", "\xC2\xB7", "\xE2\x88\x92"})  // × ÷ · −
    if (s.compare(i, std::strlen(op), op) == 0) return std::strlen(op);
  return 0;
}

// A variable ends just before position `end` (spaces skipped): a word that starts with a letter or
// '_', or a ')'.
bool variable_before(const std::string& s, size_t end) {
  while (end > 0 && blank(s[end - 1])) --end;
  if (end == 0) return false;
  if (s[end - 1] == ')') return true;
  size_t start = end;
  while (start > 0 && word_char(s[start - 1])) --start;
  return start < end && !digit(s[start]);
}

// The clause right of the '=' at `eq` holds a word and a binary operator.
bool expression_after(const std::string& s, size_t eq) {
  size_t i = eq + 1;
  while (i < s.size() && blank(s[i])) ++i;
  const size_t first = i;
  bool word = false, op = false;
  while (i < s.size()) {
    const char c = s[i];
    if (c == '\n' || c == '\r' || c == ';' || c == ',' || c == '?' || c == '!') break;
    if (c == '.' && (i + 1 == s.size() || blank(s[i + 1]) || s[i + 1] == '\n')) break;
    if (c == '=') break;  // the next '=' starts another clause
    if (word_char(c) && !digit(c)) {
      word = true;
      while (i < s.size() && word_char(s[i])) ++i;
      continue;
    }
    if (digit(c)) {  // a number, its letters included (2x counts its x as a variable below)
      ++i;
      while (i < s.size() && (digit(s[i]) || s[i] == '.')) ++i;
      continue;
    }
    if (const size_t n = operator_at(s, i)) {
      if (i > first) op = true;
      i += n;
      continue;
    }
    ++i;
  }
  return word && op;
}

}  // namespace

bool states_formula(const std::string& text) {
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '=') continue;
    const char before = i > 0 ? text[i - 1] : '\0', after = i + 1 < text.size() ? text[i + 1] : '\0';
    if (std::strchr("=<>!", before) != nullptr && before != '\0') continue;
    if (after == '=' || after == '>' || after == '<') continue;
    if (variable_before(text, i) && expression_after(text, i)) return true;
  }
  return false;
}

}  // namespace spade::trainer
