#include "rollout/parsing.h"

#include "common/strings.h"

namespace spade::rollout {

std::string_view after_last_think(std::string_view text) {
  constexpr std::string_view kClose = "</think>";
  size_t pos = text.rfind(kClose);
  return pos == std::string_view::npos ? text : text.substr(pos + kClose.size());
}

namespace {

// The content of the \boxed{...} starting at `pos` (see extract_boxed).
std::optional<std::string> boxed_at(std::string_view text, size_t pos) {
  constexpr std::string_view kBoxed = "\\boxed";
  if (pos == std::string_view::npos) return std::nullopt;
  size_t i = pos + kBoxed.size();
  while (i < text.size() && (text[i] == ' ' || text[i] == '\t')) ++i;
  if (i >= text.size() || text[i] != '{') return std::nullopt;
  int depth = 0;
  size_t open = i;
  for (; i < text.size(); ++i) {
    if (text[i] == '{') {
      ++depth;
    } else if (text[i] == '}') {
      if (--depth == 0) break;
    }
  }
  if (depth != 0) return std::nullopt;
  std::string content(text.substr(open + 1, i - open - 1));
  // Strip up to two wrapping layers: "{x}" -> "x" when the outer braces match each other.
  for (int layer = 0; layer < 2; ++layer) {
    std::string t = trim(content);
    if (t.size() < 2 || t.front() != '{' || t.back() != '}') break;
    int d = 0;
    bool wraps = true;
    for (size_t k = 0; k < t.size(); ++k) {
      if (t[k] == '{') ++d;
      else if (t[k] == '}' && --d == 0 && k + 1 != t.size()) { wraps = false; break; }
    }
    if (!wraps) break;
    content = t.substr(1, t.size() - 2);
  }
  return trim(content);
}

}  // namespace

std::optional<std::string> extract_boxed(std::string_view text) { return boxed_at(text, text.rfind("\\boxed")); }

std::optional<std::string> extract_first_boxed(std::string_view text) { return boxed_at(text, text.find("\\boxed")); }

std::string parse_action(std::string_view response) {
  std::string_view text = after_last_think(response);
  std::optional<std::string> boxed = extract_boxed(text);
  std::string action = boxed ? "\\boxed{" + *boxed + "}" : trim(text);
  if (action.size() > kMaxActionChars) action = truncate_utf8(action, kMaxActionChars);
  return action;
}

std::string extract_code(std::string_view response) {
  for (std::string_view fence : {std::string_view("```python"), std::string_view("```py")}) {
    size_t start = response.find(fence);
    if (start == std::string_view::npos) continue;
    size_t body = response.find('\n', start);
    if (body == std::string_view::npos) return "";
    ++body;
    size_t end = response.find("```", body);
    std::string_view code = end == std::string_view::npos ? response.substr(body)
                                                          : response.substr(body, end - body);
    return std::string(code);
  }
  return trim(response);
}

}  // namespace spade::rollout
