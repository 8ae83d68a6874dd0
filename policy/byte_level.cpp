#include "policy/byte_level.h"

#include <array>

namespace spade::policy::byte_level {
namespace {

struct Tables {
  std::array<char32_t, 256> to_char{};
  std::array<int, 512> to_byte{};  // code point (< 512) -> byte, or -1
  Tables() {
    to_byte.fill(-1);
    int extra = 0;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
      to_char[b] = printable ? static_cast<char32_t>(b) : static_cast<char32_t>(256 + extra++);
      to_byte[to_char[b]] = b;
    }
  }
};

const Tables& tables() {
  static const Tables t;
  return t;
}

}  // namespace

char32_t byte_to_char(uint8_t b) { return tables().to_char[b]; }

void append_utf8(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

int utf8_next(const std::string& s, size_t pos, int32_t& cp) {
  const auto u = [&](size_t i) { return static_cast<uint8_t>(s[i]); };
  const uint8_t c = u(pos);
  cp = -1;
  int len;
  int32_t v;
  if (c < 0x80) {
    cp = c;
    return 1;
  } else if (c >= 0xC2 && c <= 0xDF) {
    len = 2, v = c & 0x1F;
  } else if (c >= 0xE0 && c <= 0xEF) {
    len = 3, v = c & 0x0F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    len = 4, v = c & 0x07;
  } else {
    return 1;
  }
  if (pos + len > s.size()) return 1;
  for (int i = 1; i < len; ++i) {
    if ((u(pos + i) & 0xC0) != 0x80) return 1;
    v = (v << 6) | (u(pos + i) & 0x3F);
  }
  // Overlong forms, surrogates and values past U+10FFFF are invalid (RFC 3629 §3).
  if ((len == 3 && v < 0x800) || (len == 4 && (v < 0x10000 || v > 0x10FFFF)) || (v >= 0xD800 && v <= 0xDFFF))
    return 1;
  cp = v;
  return len;
}

std::string encode(const std::string& bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char b : bytes) append_utf8(out, tables().to_char[b]);
  return out;
}

std::string decode(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  size_t i = 0;
  while (i < text.size()) {
    int32_t cp;
    const int len = utf8_next(text, i, cp);
    if (cp >= 0 && cp < 512 && tables().to_byte[cp] >= 0)
      out += static_cast<char>(tables().to_byte[cp]);
    else
      out.append(text, i, len);
    i += len;
  }
  return out;
}

}  // namespace spade::policy::byte_level
