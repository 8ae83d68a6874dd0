// The OpenAI API's request bodies, parsed and validated (`spade serve`, issue 20): POST
// /v1/chat/completions and POST /v1/completions. Torch-free: JSON in, plain structs out; every
// rejected body throws an ApiError (HTTP 400) naming the field, as OpenAI's API does.
//
// Accepted fields (OpenAI's names and defaults; vLLM's extensions top_k and min_p):
//   both:  model (required), temperature [0, 2] (default 1; below 1e-5 is greedy), top_p (0, 1]
//          (default 1), top_k (0 or -1 = off), min_p [0, 1], stop (a string or up to 4), seed, n
//          [1, 128], stream, stream_options.include_usage, ignore_eos (vLLM's: sample to max_tokens,
//          past the end-of-turn and eos ids; for benchmarks); user is accepted and ignored.
//   chat:  messages (system | developer (= system) | user | assistant | tool; content a string, null,
//          or text parts), max_completion_tokens or max_tokens, logprobs + top_logprobs [0, 20], tools
//          (type "function" with a name), tool_choice "auto" | "none", parallel_tool_calls.
//   completions: prompt (a string, strings, token ids, or lists of token ids), max_tokens (default
//          16, as OpenAI), logprobs [0, 20] (null = none).
// Fields whose effect spade does not implement are refused when set to anything but their no-op
// value (frequency_penalty, presence_penalty, repetition_penalty, logit_bias, response_format other than
// text, tool_choice "required" or a named function, best_of > 1, echo, suffix, non-text content parts),
// so a client never gets an answer that silently ignored what it asked for. Other fields are ignored.
// Thread-safety: pure functions; thread-safe.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "policy/chat_formats.h"

namespace spade::serve {

/// An error answered as OpenAI's error object (api_response.h: error_json): HTTP `status` and
/// {"error": {"message", "type", "param", "code"}}.
class ApiError : public std::runtime_error {
 public:
  /// `type` defaults to "invalid_request_error" for a 4xx status and "server_error" otherwise.
  ApiError(int status, const std::string& message, std::string param = "", std::string code = "",
           std::string type = "");
  int status;
  std::string type;
  std::string param;  // the offending request field ("" -> null)
  std::string code;   // a machine-readable code ("" -> null)
};

/// Sampling fields shared by both endpoints, validated.
struct SamplingFields {
  double temperature = 1.0;            // 0 = greedy
  double top_p = 1.0;
  int top_k = 0;                       // 0 = off
  double min_p = 0.0;
  std::optional<int64_t> max_tokens;   // >= 1; absent: the API fills in its default
  std::vector<std::string> stop;       // non-empty strings
  std::optional<uint64_t> seed;        // absent: the server draws one (a negative seed wraps to uint64)
  int n = 1;
  int logprobs = -1;                   // -1 = no logprobs; else alternatives per token, [0, 20]
  bool stream = false;
  bool include_usage = false;          // stream_options.include_usage
  bool ignore_eos = false;             // vLLM's extension: no stop token ends the reply
};

struct ChatRequest {
  std::string model;
  std::vector<policy::RichMessage> messages;  // roles system | user | assistant | tool
  std::vector<nlohmann::ordered_json> tools;  // each as given: {"type": "function", "function": {...}}
  bool tool_calls_enabled = false;            // tools given and tool_choice is not "none"
  bool parallel_tool_calls = true;            // false: at most one tool call per reply
  SamplingFields sampling;
};

/// One prompt of /v1/completions: text, or token ids.
struct CompletionPrompt {
  std::string text;
  std::vector<int64_t> ids;
  bool is_ids = false;
};

struct CompletionRequest {
  std::string model;
  std::vector<CompletionPrompt> prompts;  // non-empty
  SamplingFields sampling;
};

/// Parses a /v1/chat/completions body. Throws ApiError(400) for malformed JSON, a missing or mistyped
/// field, a value out of range or an unsupported feature (message and param name the field).
ChatRequest parse_chat_request(const std::string& body);

/// Parses a /v1/completions body. Throws ApiError(400) as parse_chat_request.
CompletionRequest parse_completion_request(const std::string& body);

}  // namespace spade::serve
