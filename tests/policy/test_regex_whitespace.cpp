// \s in pre-tokenizer regexes means Unicode White_Space, as in HF tokenizers (policy/regex_split.h,
// with_oniguruma_classes). Expected splits are derived by hand from the Llama 3 regex alternatives
//   A1 (?i:'s|...)  A2 [^\r\n\p{L}\p{N}]?\p{L}+  A3 \p{N}{1,3}  A4 ' ?[^\s\p{L}\p{N}]+[\r\n]*'
//   A5 \s*[\r\n]+  A6 \s+(?!\S)  A7 \s+            (leftmost match, first alternative that matches)
// and the White_Space list of Unicode's PropList.txt; every split here was also checked against HF's Rust
// tokenizers (npm tokenizers@0.23.2, Tokenizer.fromFile(llama3 tokenizer.json).getPreTokenizer()
// .preTokenizeString(s)), e.g. "!\u180e!" -> ["!\u180e!"], "!\u0085!" -> ["!", "\u0085", "!"].
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "policy/byte_level.h"
#include "policy/regex_split.h"

using namespace spade::policy;
using Pieces = std::vector<std::string>;

namespace {

std::string utf8(char32_t cp) {
  std::string s;
  byte_level::append_utf8(s, cp);
  return s;
}

Pieces split_llama3(const std::string& text) {
  return RegexSplitter(kLlama3SplitRegex, SplitBehavior::kIsolated, false, false, "test").split(text);
}

}  // namespace

// "!" + c + "!" for every White_Space code point c other than ' ', '\n', '\r': "!" (A4 stops at c, which
// is \s), c (A4 fails on \s; A6 fails because "!" follows; A7), "!".
// ' ': "!", " !" (A4 takes the optional leading space). '\n', '\r': "!" + c (A4's [\r\n]*), "!".
TEST(RegexWhitespace, EveryUnicodeWhiteSpaceIsSpace) {
  const std::vector<char32_t> white_space = {0x09,   0x0A,   0x0B,   0x0C,   0x0D,   0x20,   0x85,   0xA0,
                                             0x1680, 0x2000, 0x2001, 0x2002, 0x2003, 0x2004, 0x2005, 0x2006,
                                             0x2007, 0x2008, 0x2009, 0x200A, 0x2028, 0x2029, 0x202F, 0x205F,
                                             0x3000};
  ASSERT_EQ(white_space.size(), 25u);  // PropList.txt: 25 White_Space code points
  for (char32_t c : white_space) {
    SCOPED_TRACE(static_cast<unsigned>(c));
    const std::string s = "!" + utf8(c) + "!";
    if (c == ' ')
      EXPECT_EQ(split_llama3(s), (Pieces{"!", " !"}));
    else if (c == '\n' || c == '\r')
      EXPECT_EQ(split_llama3(s), (Pieces{"!" + utf8(c), "!"}));
    else
      EXPECT_EQ(split_llama3(s), (Pieces{"!", utf8(c), "!"}));
  }
}

// Format and control characters that are not White_Space: "!" + c + "!" is one A4 piece. U+180E was
// Zs before Unicode 6.3 and is still in PCRE2's \h, which is what with_oniguruma_classes corrects.
TEST(RegexWhitespace, NonWhiteSpaceFormatCharactersArePunctuation) {
  for (char32_t c : {char32_t(0x180E), char32_t(0x200B), char32_t(0x2060), char32_t(0xFEFF), char32_t(0x1C)}) {
    SCOPED_TRACE(static_cast<unsigned>(c));
    const std::string s = "!" + utf8(c) + "!";
    EXPECT_EQ(split_llama3(s), (Pieces{s}));
  }
  // "x" (A2), then U+180E + "\n": A4 (U+180E is not \s, [\r\n]* takes the newline). Rust: ["x", "\u180e\n"].
  EXPECT_EQ(split_llama3("x\u180e\n"), (Pieces{"x", "\u180e\n"}));
}

// The rewrite itself: \s outside and inside a class, \S outside a class, and what must stay unchanged.
TEST(RegexWhitespace, RewriteKeepsOtherSyntax) {
  const std::string ws = R"(\t\n\x{0B}\f\r\x{20}\x{85}\x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000})";
  EXPECT_EQ(with_oniguruma_classes(R"(a\sb)"), "a[" + ws + "]b");
  EXPECT_EQ(with_oniguruma_classes(R"(\S+)"), "[^" + ws + "]+");
  EXPECT_EQ(with_oniguruma_classes(R"([^\s\p{L}])"), "[^" + ws + R"(\p{L}])");
  EXPECT_EQ(with_oniguruma_classes(R"([]\s])"), "[]" + ws + "]");        // ']' first in a class is literal
  EXPECT_EQ(with_oniguruma_classes(R"([[:alpha:]\s])"), "[[:alpha:]" + ws + "]");
  EXPECT_EQ(with_oniguruma_classes(R"(\\s)"), R"(\\s)");                   // escaped backslash, then 's'
  EXPECT_EQ(with_oniguruma_classes(R"(\Q\s\E\s)"), R"(\Q\s\E[)" + ws + "]");
  EXPECT_EQ(with_oniguruma_classes(R"([\S])"), R"([\S])");                 // kept (documented)
  EXPECT_EQ(with_oniguruma_classes(kQwen2SplitRegex).find(R"(\s)"), std::string::npos);
  // Matching through RegexSplitter: a literal backslash + 's' is still matched literally.
  RegexSplitter lit(R"(\\s)", SplitBehavior::kIsolated, false, false, "test");
  EXPECT_EQ(lit.matches("a\\sb s"), (std::vector<std::pair<size_t, size_t>>{{1, 3}}));
}

// \w, \W, \b and \B follow Oniguruma's Unicode \w (doc/RE: Letter | Mark | Number | Connector_Punctuation),
// not PCRE2's (letters, numbers, '_'). Pieces derived by hand from that definition; the \b case was found
// by a differential test against HF tokenizers 0.23.2 (pattern "\b": HF keeps "्त" whole, where PCRE2's \b
// saw a boundary after the virama U+094D, a mark).
TEST(RegexWhitespace, WordClassesFollowOniguruma) {
  auto split = [](const std::string& pattern, const std::string& text) {
    return RegexSplitter(pattern, SplitBehavior::kIsolated, false, false, "test").split(text);
  };
  // Boundaries only at both ends (empty matches): one piece.
  EXPECT_EQ(split(R"(\b)", "\u094D\u0924"), (std::vector<std::string>{"\u094D\u0924"}));
  // "nai" + U+0308 (combining diaeresis, Mn) + "ve" is one \w+ run.
  EXPECT_EQ(split(R"(\w+)", "nai\u0308ve!"), (std::vector<std::string>{"nai\u0308ve", "!"}));
  // U+203F (undertie, Pc) is a word character, '-' is not: \W+ matches only the '-'.
  EXPECT_EQ(split(R"(\W+)", "a\u203Fb-c"), (std::vector<std::string>{"a\u203Fb", "-", "c"}));
  // \B between two word characters (a letter and a mark), \b between a word character and a space.
  EXPECT_EQ(RegexSplitter(R"(\B)", SplitBehavior::kIsolated, false, false, "t").matches("e\u0301 x"),
            (std::vector<std::pair<size_t, size_t>>{{1, 1}}));
  // Inside a class \w is the members; \b there stays a backspace.
  EXPECT_EQ(split(R"([\w-]+)", "x\u0301-y z"), (std::vector<std::string>{"x\u0301-y", " ", "z"}));
  EXPECT_EQ(with_oniguruma_classes(R"([\b])"), R"([\b])");
}
