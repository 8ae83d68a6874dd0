// ChoiceText: one choice's sampled tokens turned into the text the OpenAI API returns, either at once
// (a plain response) or piece by piece as tokens arrive (a stream), the pieces adding up to the same
// text. Torch-free; the tokenizer enters as a decode function.
//
// The text of a choice with tokens t[0..m) (what `spade generate` prints, plus OpenAI's stop rules):
//   - a final stop token (the sampler's end of turn / eos, kept as the last token) is left out;
//   - a choice ended by a stop string is cut before that string's first occurrence (OpenAI: the stop
//     sequence is not returned);
//   - with tool calls enabled, Qwen's <tool_call>{json}</tool_call> blocks after the last </think>
//     (rollout/tool_calls.h) that parse become tool calls and the content is the text before the first
//     of them (vLLM's hermes parser); the finish reason is then "tool_calls".
// A plain reply is decode() of its tokens at once. A stream decodes incrementally as vLLM's detokenizer
// does: decode(t[p..]) minus decode(t[p..r)) over a short window that moves on once a delta is complete,
// holding back a delta that ends in U+FFFD (half a UTF-8 character). Text that could still become a stop
// string (its longest length - 1 bytes) or the start of "<tool_call>" is held back until it cannot. Sent
// pieces are never retracted.
// Thread-safety: none (one per choice, used by one thread).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "serve/api_response.h"

namespace spade::serve {

class ChoiceText {
 public:
  using Decode = std::function<std::string(const std::vector<int64_t>&)>;
  /// `decode` maps ids to text (thread-compatible, e.g. the tokenizer's); `stop` are the request's stop
  /// strings; `tool_calls`: parse tool calls (tools given, tool_choice "auto"); `parallel`: keep every
  /// tool call (false: the first only); `call_id_prefix` starts each call id ("call_<prefix>_<k>").
  ChoiceText(Decode decode, std::vector<std::string> stop, bool tool_calls = false, bool parallel = true,
             std::string call_id_prefix = "");

  /// Appends tokens that do not end the choice; returns the content that can be sent now ("" if none).
  std::string push(const std::vector<int64_t>& tokens);

  /// Ends the choice: `last` are its tokens not pushed yet (ending with the stop token when
  /// `ends_with_stop_token`), `reason` the sampler's finish reason ("stop" | "length" | "abort") and
  /// `stop_string` the stop string that ended it ("" if none). Returns the rest of the content; then
  /// content() is the whole content, tool_calls() the calls and finish_reason() OpenAI's reason.
  std::string finish(const std::vector<int64_t>& last, const std::string& reason, const std::string& stop_string,
                     bool ends_with_stop_token);

  const std::string& content() const { return content_; }
  const std::vector<ReplyToolCall>& tool_calls() const { return calls_; }
  const std::string& finish_reason() const { return finish_reason_; }

 private:
  void add_token(int64_t id);
  std::string flush_decoder();
  std::string take_sendable();

  Decode decode_;
  std::vector<std::string> stop_;
  bool tool_calls_, parallel_;
  std::string call_id_prefix_;
  size_t hold_ = 0;               // bytes held back for stop strings: longest - 1
  std::vector<int64_t> tokens_;
  size_t prefix_offset_ = 0, read_offset_ = 0;  // the decoder's window: t[prefix, read) is decoded text
  std::string text_;              // decoded text so far (the sum of the decoder's deltas)
  std::string content_;           // content returned so far (a prefix of the final content)
  std::vector<ReplyToolCall> calls_;
  std::string finish_reason_;
};

}  // namespace spade::serve
