#include "common/terminal_text.h"

#include <cstdint>
#include <cstdio>

namespace spade {
namespace {

void append_hex_byte(std::string* out, unsigned char c) {
  char buf[8];
  std::snprintf(buf, sizeof(buf), "\\x%02x", c);
  *out += buf;
}

void append_code_point(std::string* out, uint32_t cp) {
  char buf[12];
  std::snprintf(buf, sizeof(buf), "\\u%04x", static_cast<unsigned>(cp));
  *out += buf;
}

// Code points above ASCII that a terminal or a bidi-aware renderer acts on.
bool is_control(uint32_t cp) {
  return (cp >= 0x80 && cp <= 0x9F) || cp == 0x061C || cp == 0x200E || cp == 0x200F || cp == 0x2028 ||
         cp == 0x2029 || (cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069);
}

// Length of the valid UTF-8 sequence at s[i] and its code point; 0 when invalid.
size_t utf8_sequence(std::string_view s, size_t i, uint32_t* cp) {
  unsigned char c = static_cast<unsigned char>(s[i]);
  size_t n = c >= 0xF0 && c <= 0xF4 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 && c <= 0xDF ? 2 : 0;
  if (n == 0 || i + n > s.size()) return 0;
  uint32_t v = c & (n == 2 ? 0x1F : n == 3 ? 0x0F : 0x07);
  for (size_t k = 1; k < n; ++k) {
    unsigned char d = static_cast<unsigned char>(s[i + k]);
    if ((d & 0xC0) != 0x80) return 0;
    v = (v << 6) | (d & 0x3F);
  }
  // Overlong forms, surrogates and values past U+10FFFF are invalid.
  if ((n == 3 && v < 0x800) || (n == 4 && (v < 0x10000 || v > 0x10FFFF)) || (v >= 0xD800 && v <= 0xDFFF)) return 0;
  *cp = v;
  return n;
}

}  // namespace

std::string escape_for_terminal(std::string_view text, bool keep_newlines_and_tabs) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) {
      if (c == '\n' || c == '\t') {
        if (keep_newlines_and_tabs) out += static_cast<char>(c);
        else out += c == '\n' ? "\\n" : "\\t";
      } else if (c == '\r') {
        out += "\\r";
      } else if (c < 0x20 || c == 0x7F) {
        append_hex_byte(&out, c);
      } else {
        out += static_cast<char>(c);
      }
      ++i;
      continue;
    }
    uint32_t cp = 0;
    size_t n = utf8_sequence(text, i, &cp);
    if (n == 0) {
      append_hex_byte(&out, c);
      ++i;
    } else {
      if (is_control(cp)) append_code_point(&out, cp);
      else out.append(text.substr(i, n));
      i += n;
    }
  }
  return out;
}

}  // namespace spade
