#include "policy/regex_split.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <algorithm>

#include "common/error.h"

namespace spade::policy {
namespace {

std::string pcre2_message(int code) {
  PCRE2_UCHAR buf[256];
  pcre2_get_error_message(code, buf, sizeof(buf));
  return reinterpret_cast<const char*>(buf);
}

// The Unicode White_Space code points (Unicode PropList.txt), written as PCRE2 class members: the set that
// Oniguruma (HF tokenizers' regex engine) and Rust's regex crate match with \s. PCRE2 10.42's \s under
// PCRE2_UCP (\p{Z} + \h + \v) also matches U+180E, which is not White_Space since Unicode 6.3.
constexpr const char* kWhiteSpaceMembers =
    R"(\t\n\x{0B}\f\r\x{20}\x{85}\x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000})";

// Oniguruma's Unicode \w (doc/RE: General_Category Letter | Mark | Number | Connector_Punctuation), which
// its \b and \B are defined by. PCRE2 10.42's \w under PCRE2_UCP is \p{L}, \p{N} and '_' only: no
// combining marks (a Devanagari virama, U+0308) and no other connector punctuation (U+203F).
constexpr const char* kWordMembers = R"(\p{L}\p{M}\p{N}\p{Pc})";

}  // namespace

std::string with_oniguruma_classes(const std::string& pattern) {
  const std::string members = kWhiteSpaceMembers, word = kWordMembers;
  const std::string w = "[" + word + "]";
  std::string out;
  out.reserve(pattern.size() + 64);
  bool in_class = false;
  size_t class_first = 0;  // index of the first member of the open class (a ']' there is literal)
  for (size_t i = 0; i < pattern.size(); ++i) {
    const char c = pattern[i];
    if (c == '\\' && i + 1 < pattern.size()) {
      const char n = pattern[i + 1];
      if (n == 'Q') {  // \Q...\E: quoted literally, copied as is
        const size_t e = pattern.find("\\E", i + 2);
        const size_t end = e == std::string::npos ? pattern.size() : e + 2;
        out.append(pattern, i, end - i);
        i = end - 1;
      } else if (n == 's') {
        out += in_class ? members : "[" + members + "]";
        ++i;
      } else if (n == 'S' && !in_class) {
        out += "[^" + members + "]";
        ++i;
      } else if (n == 'w') {
        out += in_class ? word : w;
        ++i;
      } else if (n == 'W' && !in_class) {
        out += "[^" + word + "]";
        ++i;
      } else if (n == 'b' && !in_class) {  // a word boundary by that \w (inside a class \b is a backspace)
        out += "(?:(?<=" + w + ")(?!" + w + ")|(?<!" + w + ")(?=" + w + "))";
        ++i;
      } else if (n == 'B' && !in_class) {
        out += "(?:(?<=" + w + ")(?=" + w + ")|(?<!" + w + ")(?!" + w + "))";
        ++i;
      } else {  // any other escape (including \S and \W inside a class) is kept
        out += c;
        out += n;
        ++i;
      }
      continue;
    }
    if (in_class) {
      if (c == '[' && i + 1 < pattern.size() && pattern[i + 1] == ':') {  // POSIX [:name:] inside a class
        const size_t e = pattern.find(":]", i + 2);
        if (e != std::string::npos) {
          out.append(pattern, i, e + 2 - i);
          i = e + 1;
          continue;
        }
      }
      if (c == ']' && i > class_first) in_class = false;
      out += c;
      continue;
    }
    out += c;
    if (c == '[') {
      in_class = true;
      class_first = i + 1;
      if (class_first < pattern.size() && pattern[class_first] == '^') {
        out += '^';
        ++class_first;
        ++i;
      }
    }
  }
  return out;
}

SplitBehavior parse_split_behavior(const std::string& name, const std::string& where) {
  if (name == "Removed") return SplitBehavior::kRemoved;
  if (name == "Isolated") return SplitBehavior::kIsolated;
  if (name == "MergedWithPrevious") return SplitBehavior::kMergedWithPrevious;
  if (name == "MergedWithNext") return SplitBehavior::kMergedWithNext;
  if (name == "Contiguous") return SplitBehavior::kContiguous;
  throw spade::Error(where + ": unknown split behavior '" + name +
                     "' (expected Removed, Isolated, MergedWithPrevious, MergedWithNext or Contiguous)");
}

RegexSplitter::RegexSplitter(const std::string& pattern, SplitBehavior behavior, bool invert, bool literal,
                             const std::string& where)
    : behavior_(behavior), invert_(invert), where_(where) {
  int err = 0;
  PCRE2_SIZE offset = 0;
  // PCRE2_LITERAL refuses PCRE2_UCP (irrelevant for a literal string).
  const uint32_t options = PCRE2_UTF | PCRE2_MATCH_INVALID_UTF | (literal ? PCRE2_LITERAL : PCRE2_UCP);
  const std::string compiled = literal ? pattern : with_oniguruma_classes(pattern);
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(compiled.data()), compiled.size(), options, &err,
                                   &offset, nullptr);
  if (!code)
    throw spade::Error(where + ": pattern does not compile (PCRE2: " + pcre2_message(err) + " at offset " +
                       std::to_string(offset) + "): " + pattern);
  // JIT is an optimisation only: when unavailable, pcre2_match interprets the pattern.
  pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);
  code_ = std::shared_ptr<void>(code, [](void* c) { pcre2_code_free(static_cast<pcre2_code*>(c)); });
}

std::vector<std::pair<size_t, size_t>> RegexSplitter::matches(const std::string& text) const {
  std::vector<std::pair<size_t, size_t>> out;
  auto* code = static_cast<const pcre2_code*>(code_.get());
  std::unique_ptr<pcre2_match_data, void (*)(pcre2_match_data*)> md(
      pcre2_match_data_create_from_pattern(code, nullptr), pcre2_match_data_free);
  if (!md) throw spade::Error(where_ + ": out of memory for PCRE2 match data");
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  // The iteration of the onig crate's find_iter, which HF's SysRegex uses: search from `start`; an
  // empty match that ends where the previous accepted match ended is not accepted and the search moves
  // on by one character (one byte inside invalid UTF-8); any other match is accepted and the search
  // continues at its end. So a pattern that can match empty yields empty matches between characters
  // (an empty pattern: at every character boundary, which splits the text into single characters).
  size_t start = 0;
  bool any = false;
  size_t last_end = 0;
  while (start <= text.size()) {
    int rc = pcre2_match(code, subject, text.size(), start, 0, md.get(), nullptr);
    if (rc == PCRE2_ERROR_JIT_STACKLIMIT)  // very long runs: retry in the interpreter (heap-backed)
      rc = pcre2_match(code, subject, text.size(), start, PCRE2_NO_JIT, md.get(), nullptr);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) throw spade::Error(where_ + ": PCRE2 matching failed: " + pcre2_message(rc));
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md.get());
    if (ov[1] == ov[0] && any && last_end == ov[1]) {
      if (start >= text.size()) break;
      size_t next = start + 1;
      while (next < text.size() && (static_cast<unsigned char>(text[next]) & 0xC0) == 0x80) ++next;
      start = next;
      continue;
    }
    out.emplace_back(ov[0], ov[1]);
    any = true;
    last_end = start = ov[1];
  }
  return out;
}

std::vector<std::string> RegexSplitter::split(const std::string& text) const {
  // (begin, end, is_match) covering the whole text.
  struct Span {
    size_t b, e;
    bool m;
  };
  std::vector<Span> spans;
  size_t pos = 0;
  for (const auto& [b, e] : matches(text)) {
    if (b > pos) spans.push_back({pos, b, invert_});
    spans.push_back({b, e, !invert_});
    pos = e;
  }
  if (pos < text.size()) spans.push_back({pos, text.size(), invert_});

  std::vector<Span> kept;
  switch (behavior_) {
    case SplitBehavior::kIsolated:
      kept = spans;
      break;
    case SplitBehavior::kRemoved:
      for (const Span& s : spans)
        if (!s.m) kept.push_back(s);
      break;
    case SplitBehavior::kMergedWithPrevious: {
      bool prev_match = false;
      for (const Span& s : spans) {
        if (s.m && !prev_match && !kept.empty()) kept.back().e = s.e;
        else kept.push_back(s);
        prev_match = s.m;
      }
      break;
    }
    case SplitBehavior::kMergedWithNext: {
      bool prev_match = false;
      for (auto it = spans.rbegin(); it != spans.rend(); ++it) {
        if (it->m && !prev_match && !kept.empty()) kept.back().b = it->b;
        else kept.push_back(*it);
        prev_match = it->m;
      }
      std::reverse(kept.begin(), kept.end());
      break;
    }
    case SplitBehavior::kContiguous: {
      bool prev_match = false;
      for (const Span& s : spans) {
        if (s.m == prev_match && !kept.empty()) kept.back().e = s.e;
        else kept.push_back(s);
        prev_match = s.m;
      }
      break;
    }
  }
  std::vector<std::string> out;
  out.reserve(kept.size());
  for (const Span& s : kept)
    if (s.e > s.b) out.push_back(text.substr(s.b, s.e - s.b));
  return out;
}

}  // namespace spade::policy
