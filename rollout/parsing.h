// Parsing of policy outputs: the agent's \boxed{} action and the designer's Python code.
// Pure string functions (no torch, no Python); thread-safe.
#pragma once
#include <optional>
#include <string>
#include <string_view>

namespace spade::rollout {

/// Maximum action length passed to an environment, in characters (reference §3:
/// "Actions capped at 100k characters").
constexpr size_t kMaxActionChars = 100000;

/// Returns the text after the last "</think>" (thinking mode, reference §3), or `text` if there is none.
std::string_view after_last_think(std::string_view text);

/// Content of the last \boxed{...} in `text`, found by brace matching from the last "\boxed"
/// and stripping up to 2 wrapping brace layers ("\boxed{{x}}" -> "x"), reference §3.
/// Returns nullopt when there is no \boxed or its braces never close.
std::optional<std::string> extract_boxed(std::string_view text);
/// The same for the first \boxed{...} of `text` (the self-validator's verdict, SPADE App. F.2).
std::optional<std::string> extract_first_boxed(std::string_view text);

/// The action handed to step(): "\boxed{X}" re-wrapped from extract_boxed (after the last
/// </think>), else the stripped raw text; capped at kMaxActionChars (reference §3).
std::string parse_action(std::string_view response);

/// Code extraction from a designer response (reference §2): the first ```python (or ```py) fenced
/// block; an unterminated fence runs to the end of the text; with no python fence, the whole
/// response (stripped).
std::string extract_code(std::string_view response);

}  // namespace spade::rollout
