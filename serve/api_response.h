// The OpenAI API's response bodies and their server-sent-events framing (`spade serve`, issue 20).
// Torch-free JSON builders; the shapes are OpenAI's (chat.completion, chat.completion.chunk,
// text_completion, the error object). Thread-safety: pure functions; thread-safe.
//
// Streaming (OpenAI's "stream": true): the body is a sequence of events
//   data: {json}\n\n   ...   data: [DONE]\n\n
// each JSON on one line (no newline inside, so one "data:" line per event).
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "serve/api_request.h"

namespace spade::serve {

/// {"error": {"message", "type", "param", "code"}} with null for an empty param or code.
nlohmann::ordered_json error_json(const ApiError& e);

/// One server-sent event carrying `payload`: "data: " + compact JSON + "\n\n". Invalid UTF-8 in strings
/// is replaced by U+FFFD (a model can sample half a character).
std::string sse_event(const nlohmann::ordered_json& payload);
/// The last event of a stream.
inline constexpr const char* kSseDone = "data: [DONE]\n\n";

/// Compact JSON with invalid UTF-8 replaced by U+FFFD (every body the server sends).
std::string dump_json(const nlohmann::ordered_json& j);

/// One tool call of a reply.
struct ReplyToolCall {
  std::string id;          // "call_..."
  std::string name;
  std::string arguments;   // a JSON object, encoded as a string (OpenAI's form)
};

/// One sampled token for logprobs: its text, its logprob and the alternatives (text, logprob).
struct TokenInfo {
  std::string text;
  float logprob = 0;
  std::vector<std::pair<std::string, float>> top;
};

/// A chat choice's "logprobs": {"content": [{"token", "logprob", "bytes", "top_logprobs": [...]}]}.
nlohmann::ordered_json chat_logprobs(const std::vector<TokenInfo>& tokens);
/// A completion choice's "logprobs": {"tokens", "token_logprobs", "top_logprobs" (a {text: logprob}
/// object per token, null when `with_top` is false), "text_offset" (byte offset of each token's text,
/// the tokens' texts laid end to end from `offset`)}.
nlohmann::ordered_json completion_logprobs(const std::vector<TokenInfo>& tokens, bool with_top, size_t offset);

/// {"prompt_tokens", "completion_tokens", "total_tokens"}.
nlohmann::ordered_json usage_json(int64_t prompt_tokens, int64_t completion_tokens);

/// The fields every response object starts with: {"id", "object", "created", "model"}.
nlohmann::ordered_json response_head(const std::string& id, const char* object, int64_t created,
                                     const std::string& model);

/// A chat choice: {"index", "message": {"role": "assistant", "content" (null when empty and there are
/// tool calls), ["tool_calls"]}, "logprobs" (null unless given), "finish_reason"}.
nlohmann::ordered_json chat_choice(int index, const std::string& content, const std::vector<ReplyToolCall>& calls,
                                   const nlohmann::ordered_json& logprobs, const std::string& finish_reason);
/// A streamed chat choice: {"index", "delta", "logprobs", "finish_reason" (null when "")}.
nlohmann::ordered_json chat_chunk_choice(int index, const nlohmann::ordered_json& delta,
                                         const nlohmann::ordered_json& logprobs, const std::string& finish_reason);
/// The delta of streamed tool calls: {"tool_calls": [{"index", "id", "type": "function", "function":
/// {"name", "arguments"}}]}.
nlohmann::ordered_json tool_calls_delta(const std::vector<ReplyToolCall>& calls);
/// A completion choice (streamed or not): {"index", "text", "logprobs", "finish_reason" (null when "")}.
nlohmann::ordered_json completion_choice(int index, const std::string& text, const nlohmann::ordered_json& logprobs,
                                         const std::string& finish_reason);

}  // namespace spade::serve
