// Text from untrusted sources (an environment program's observations, error messages, output) made
// safe to print on a terminal (issue 24): a program must not be able to move the cursor, erase or
// forge report lines, set the window title or write the clipboard (OSC 52) of the person reading.
// Torch-free, Python-free.
#pragma once
#include <string>
#include <string_view>

namespace spade {

/// `text` with every character a terminal could act on written as a visible escape instead:
/// C0 controls (ESC as \x1b, BEL as \x07, CR as \r, ...; LF as \n and TAB as \t unless
/// `keep_newlines_and_tabs`), DEL (\x7f), C1 controls U+0080..U+009F (\u009b, ...), the line and
/// paragraph separators U+2028/U+2029 and the bidirectional controls (U+061C, U+200E, U+200F,
/// U+202A..U+202E, U+2066..U+2069; they reorder what is shown), and bytes that are not valid UTF-8
/// (\xNN). Everything else, backslashes included, is unchanged. Pure function; thread-safe.
std::string escape_for_terminal(std::string_view text, bool keep_newlines_and_tabs = false);

}  // namespace spade
