#include "serve/choice_text.h"

#include <algorithm>

#include "rollout/tool_calls.h"

namespace spade::serve {

namespace {
constexpr const char* kToolTag = "<tool_call>";

bool ends_with_replacement(const std::string& s) {  // U+FFFD in UTF-8: EF BF BD
  return s.size() >= 3 && s.compare(s.size() - 3, 3, "\xEF\xBF\xBD") == 0;
}
}  // namespace

ChoiceText::ChoiceText(Decode decode, std::vector<std::string> stop, bool tool_calls, bool parallel,
                       std::string call_id_prefix)
    : decode_(std::move(decode)),
      stop_(std::move(stop)),
      tool_calls_(tool_calls),
      parallel_(parallel),
      call_id_prefix_(std::move(call_id_prefix)) {
  for (const std::string& s : stop_) hold_ = std::max(hold_, s.empty() ? 0 : s.size() - 1);
}

void ChoiceText::add_token(int64_t id) {
  tokens_.push_back(id);
  const std::vector<int64_t> prefix(tokens_.begin() + prefix_offset_, tokens_.begin() + read_offset_);
  const std::vector<int64_t> window(tokens_.begin() + prefix_offset_, tokens_.end());
  const std::string prefix_text = decode_(prefix), new_text = decode_(window);
  if (new_text.size() > prefix_text.size() && !ends_with_replacement(new_text)) {
    text_ += new_text.substr(prefix_text.size());
    prefix_offset_ = read_offset_;
    read_offset_ = tokens_.size();
  }
}

std::string ChoiceText::flush_decoder() {
  if (read_offset_ == tokens_.size()) return "";
  const std::vector<int64_t> prefix(tokens_.begin() + prefix_offset_, tokens_.begin() + read_offset_);
  const std::vector<int64_t> window(tokens_.begin() + prefix_offset_, tokens_.end());
  const std::string prefix_text = decode_(prefix), new_text = decode_(window);
  prefix_offset_ = read_offset_ = tokens_.size();
  return new_text.size() > prefix_text.size() ? new_text.substr(prefix_text.size()) : "";
}

std::string ChoiceText::take_sendable() {
  size_t end = text_.size() - std::min(text_.size(), hold_);
  if (tool_calls_) {
    const size_t tag = text_.find(kToolTag);
    if (tag != std::string::npos) {
      end = std::min(end, tag);
    } else {  // a suffix that may still become "<tool_call>"
      const std::string t = kToolTag;
      for (size_t k = std::min(t.size() - 1, text_.size()); k > 0; --k)
        if (text_.compare(text_.size() - k, k, t, 0, k) == 0) {
          end = std::min(end, text_.size() - k);
          break;
        }
    }
  }
  while (end > content_.size() && end < text_.size() && (static_cast<unsigned char>(text_[end]) & 0xC0) == 0x80) --end;
  if (end <= content_.size()) return "";
  std::string out = text_.substr(content_.size(), end - content_.size());
  content_ += out;
  return out;
}

std::string ChoiceText::push(const std::vector<int64_t>& tokens) {
  for (int64_t id : tokens) add_token(id);
  return take_sendable();
}

std::string ChoiceText::finish(const std::vector<int64_t>& last, const std::string& reason,
                               const std::string& stop_string, bool ends_with_stop_token) {
  const size_t n = last.size() - (ends_with_stop_token && !last.empty() ? 1 : 0);
  if (tokens_.empty()) {  // nothing streamed: the text is decode() of the whole
    tokens_.assign(last.begin(), last.begin() + n);
    text_ = decode_(tokens_);
  } else {
    for (size_t i = 0; i < n; ++i) add_token(last[i]);
    text_ += flush_decoder();
  }
  std::string full = text_;
  if (!stop_string.empty()) {  // cut before the first occurrence of any stop string
    size_t cut = std::string::npos;
    for (const std::string& s : stop_) cut = std::min(cut, full.find(s));
    if (cut != std::string::npos) full.resize(cut);
  }
  std::string content = full;
  finish_reason_ = reason;
  if (tool_calls_) {
    for (const rollout::ToolCall& c : rollout::parse_tool_calls(full)) {
      if (!c.ok()) continue;
      calls_.push_back({"call_" + call_id_prefix_ + std::to_string(calls_.size()), c.name, c.arguments.dump()});
      if (!parallel_) break;
    }
    if (!calls_.empty()) {
      const size_t think = full.rfind("</think>");
      content = full.substr(0, full.find(kToolTag, think == std::string::npos ? 0 : think + 8));
      finish_reason_ = "tool_calls";
    }
  }
  // Held-back text never crosses a stop string or a tool call, so what was sent is a prefix of content.
  std::string rest = content.size() > content_.size() ? content.substr(content_.size()) : "";
  content_ += rest;
  return rest;
}

}  // namespace spade::serve
