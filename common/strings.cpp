#include "common/strings.h"

#include <cctype>

namespace spade {

static bool is_space(char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; }

std::string trim(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && is_space(s[b])) ++b;
  while (e > b && is_space(s[e - 1])) --e;
  return std::string(s.substr(b, e - b));
}

std::vector<std::string> split(std::string_view s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  for (size_t i = 0; i <= s.size(); ++i) {
    if (i == s.size() || s[i] == sep) {
      out.emplace_back(s.substr(start, i - start));
      start = i + 1;
    }
  }
  return out;
}

bool starts_with(std::string_view s, std::string_view prefix) {
  return s.size() >= prefix.size() && s.compare(0, prefix.size(), prefix) == 0;
}

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

size_t count_words(std::string_view s) {
  size_t n = 0;
  bool in_word = false;
  for (char c : s) {
    if (is_space(c)) {
      in_word = false;
    } else if (!in_word) {
      in_word = true;
      ++n;
    }
  }
  return n;
}

std::string truncate_words(std::string_view s, size_t max_words, std::string_view marker) {
  if (count_words(s) <= max_words) return std::string(s);
  std::string out;
  size_t words = 0;
  size_t i = 0;
  while (i < s.size() && words < max_words) {
    while (i < s.size() && is_space(s[i])) {
      if (!out.empty() && words > 0) {
        // keep one separator, preferring a newline so paragraphs survive
        if (out.back() != ' ' && out.back() != '\n') out.push_back(s[i] == '\n' ? '\n' : ' ');
        else if (s[i] == '\n') out.back() = '\n';
      }
      ++i;
    }
    size_t b = i;
    while (i < s.size() && !is_space(s[i])) ++i;
    if (i > b) {
      out.append(s.substr(b, i - b));
      ++words;
    }
  }
  out.append(marker);
  return out;
}

bool is_valid_utf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    size_t len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (len == 0 || i + len > s.size()) return false;
    for (size_t k = 1; k < len; ++k)
      if ((static_cast<unsigned char>(s[i + k]) >> 6) != 2) return false;
    i += len;
  }
  return true;
}

std::string truncate_utf8(std::string_view s, size_t max_bytes) {
  if (s.size() <= max_bytes) return std::string(s);
  size_t end = max_bytes;
  while (end > 0 && (static_cast<unsigned char>(s[end]) >> 6) == 2) --end;
  return std::string(s.substr(0, end));
}

std::string replace_all(std::string_view s, std::string_view from, std::string_view to) {
  if (from.empty()) return std::string(s);
  std::string out;
  size_t pos = 0;
  for (size_t p = s.find(from); p != std::string_view::npos; p = s.find(from, pos)) {
    out.append(s, pos, p - pos);
    out.append(to);
    pos = p + from.size();
  }
  out.append(s.substr(pos));
  return out;
}

}  // namespace spade
