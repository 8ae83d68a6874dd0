// escape_for_terminal (common/terminal_text.h, issue 24). Expected strings are written out by hand from
// the function's contract: each control becomes its visible escape, everything else stays.
#include <gtest/gtest.h>

#include "common/terminal_text.h"

namespace spade {
namespace {

TEST(TerminalText, PlainTextIsUnchanged) {
  EXPECT_EQ(escape_for_terminal("step('\\\\boxed{1}') raised ValueError: bad move"),
            "step('\\\\boxed{1}') raised ValueError: bad move");
  // Non-ASCII letters stay: e-acute (2 bytes), the euro sign (3 bytes), an emoji (4 bytes).
  EXPECT_EQ(escape_for_terminal("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x8e\xb2"), "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x8e\xb2");
}

TEST(TerminalText, EscapeSequencesBecomeVisible) {
  // Erase line, cursor up, forged report line; window title (OSC 0) and clipboard (OSC 52) ended by BEL.
  const std::string hostile = "\x1b[2K\r\x1b[1Agood.py: ADMITTED\x1b]0;pwned\x07\x1b]52;c;cHduZWQ=\x07";
  EXPECT_EQ(escape_for_terminal(hostile),
            "\\x1b[2K\\r\\x1b[1Agood.py: ADMITTED\\x1b]0;pwned\\x07\\x1b]52;c;cHduZWQ=\\x07");
  EXPECT_EQ(escape_for_terminal(std::string("a\0b\x7f", 4)), "a\\x00b\\x7f");
}

TEST(TerminalText, NewlinesAndTabsAreKeptOnlyWhenAsked) {
  EXPECT_EQ(escape_for_terminal("board:\n\tX O\r\n"), "board:\\n\\tX O\\r\\n");
  EXPECT_EQ(escape_for_terminal("board:\n\tX O\r\n", true), "board:\n\tX O\\r\n");
}

TEST(TerminalText, C1BidiAndSeparatorsAreEscaped) {
  // U+009B (CSI as one C1 character) = C2 9B, U+0085 (NEL) = C2 85, U+202E (RLO) = E2 80 AE,
  // U+2028 (LINE SEPARATOR) = E2 80 A8, U+2066 (LRI) = E2 81 A6.
  EXPECT_EQ(escape_for_terminal("\xc2\x9b" "2K\xc2\x85x\xe2\x80\xae" "y\xe2\x80\xa8z\xe2\x81\xa6"),
            "\\u009b2K\\u0085x\\u202ey\\u2028z\\u2066");
}

TEST(TerminalText, InvalidUtf8BytesAreEscaped) {
  // A lone continuation byte, a truncated 3-byte sequence at the end, an overlong '/' (C0 AF).
  EXPECT_EQ(escape_for_terminal("a\x80" "b\xc0\xaf" "c\xe2\x82"), "a\\x80b\\xc0\\xafc\\xe2\\x82");
}

}  // namespace
}  // namespace spade
