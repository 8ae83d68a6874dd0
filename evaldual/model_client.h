// An OpenAI-compatible chat-completions client over libcurl (issue 6; reference §5: "Effort/provider
// passed in the request body. Cost: usage.cost if reported, else tokens x per-token price. Rate limit:
// per (model, provider) requests-per-minute, process-wide spacing. Max 32768 response tokens. One API
// key variable; OpenAI-compatible base URL").
//
// One call = POST {base_url}/chat/completions with the JSON body
//   {"model", "messages": [{"role", "content"}], "max_tokens", ["temperature"], [effort field],
//    ...extra_body merged in (RFC 7386 merge patch)}
// and header "Authorization: Bearer $API_KEY_ENV" (omitted when api_key_env is empty). The reply is
// choices[0].message.content; usage.{prompt,completion,total}_tokens and usage.cost (OpenRouter) are read
// when present.
//
// Retries (up to max_retries after the first attempt) on HTTP 408, 429 and 5xx, on transport timeouts
// and dropped connections, and on a 200 body that carries only an "error" object with such a code. The
// wait before retry n (0-based) is "equal jitter" exponential backoff: d/2 + U(0, d/2) with
// d = min(backoff_cap_s, backoff_base_s * 2^n) (AWS Architecture Blog, "Exponential Backoff And Jitter",
// 2015); a Retry-After header (seconds or HTTP date) replaces it, capped at backoff_cap_s. Other 4xx
// responses, malformed bodies and bad URLs are not retried. The API key never appears in an error
// message (any echo of it in a server message is replaced by "***").
//
// Thread-safety: ChatClient is thread-safe: complete() may be called concurrently (one libcurl easy
// handle per call; curl_global_init runs once per process); the totals are guarded by a mutex.
#pragma once
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "evaldual/harness.h"

namespace spade::evaldual {

class RateLimiter;

/// Where and how to call one model. Defaults follow reference §5/§7 (32768 max tokens, 1800 s agent
/// timeouts bound a single call from above); the retry defaults are common client practice (openai-python
/// retries twice; we retry 5 times because a duel session cannot resume a failed call).
struct ModelEndpoint {
  std::string name;                    // label for messages and usage (e.g. the participant id)
  std::string base_url;                // e.g. "https://openrouter.ai/api/v1" (no trailing /chat/completions)
  std::string model;                   // the provider's model id, sent as "model"
  std::string api_key_env = "OPENAI_API_KEY";  // environment variable holding the key; "" = no key
  std::optional<double> temperature;   // not sent when unset
  int64_t max_tokens = 32768;          // sent as "max_tokens"; <= 0: not sent
  std::string reasoning_effort;        // e.g. "high"; not sent when empty
  std::string effort_field = "reasoning_effort";  // body path for the effort; "reasoning.effort" nests
                                       // it as {"reasoning": {"effort": ...}} (OpenRouter's form)
  std::string provider;                // provider label (rate-limit key, usage); not sent by itself
  nlohmann::json extra_body = nlohmann::json::object();  // merged into the body last (merge patch)
  double connect_timeout_s = 30.0;     // TCP/TLS connect limit, seconds
  double timeout_s = 600.0;            // whole-request limit per attempt, seconds
  int max_retries = 5;                 // retries after the first attempt
  double backoff_base_s = 1.0;         // first backoff step, seconds
  double backoff_cap_s = 60.0;         // largest backoff step and Retry-After honoured, seconds
  double requests_per_minute = 0.0;    // per (model, provider), process-wide; <= 0: unlimited
  double price_input_per_m = 0.0;      // USD per 1M prompt tokens (used when usage.cost is absent)
  double price_output_per_m = 0.0;     // USD per 1M completion tokens

  /// The request URL: base_url without trailing '/' + "/chat/completions".
  std::string url() const;
};

/// Token usage and cost of one call.
struct ChatUsage {
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
  int64_t total_tokens = 0;      // usage.total_tokens, else prompt + completion
  double cost_usd = 0.0;         // usage.cost when reported, else tokens x endpoint prices / 1e6
  bool cost_reported = false;    // true: cost_usd came from the server's usage.cost
  bool usage_reported = false;   // false: the server sent no usage block (token counts are 0)
  double latency_s = 0.0;        // wall clock of the whole call: attempts, backoff and rate-limit waits
  int retries = 0;               // attempts beyond the first
};

/// One completion.
struct ChatReply {
  std::string content;           // choices[0].message.content ("" when null)
  std::string finish_reason;     // choices[0].finish_reason ("" when absent)
  std::string model;             // the "model" the server reports ("" when absent)
  ChatUsage usage;
};

/// Cumulative accounting of a client (all calls since construction).
struct ChatTotals {
  int64_t calls = 0;             // successful completions
  int64_t failed_calls = 0;      // complete() calls that threw
  int64_t attempts = 0;          // HTTP attempts, including retries and failures
  int64_t retries = 0;
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
  double cost_usd = 0.0;
  double latency_s = 0.0;        // sum of ChatUsage::latency_s over successful calls
};

/// A client for one endpoint. Not copyable (it owns its accounting).
class ChatClient {
 public:
  /// Validates the endpoint and reads the API key from the environment. Throws spade::Error when
  /// base_url or model is empty, base_url is not http(s)://, a number is out of range, or api_key_env
  /// names a variable that is unset or empty (the message names the variable, never a value).
  explicit ChatClient(ModelEndpoint endpoint);
  ChatClient(const ChatClient&) = delete;
  ChatClient& operator=(const ChatClient&) = delete;

  /// Sends `messages` (role, content) and returns the first choice. Throws spade::Error naming the
  /// endpoint, the URL, the HTTP status (or transport error) and the server's error message when the
  /// call fails after its retries, when a non-retryable status comes back, or when the body is not
  /// an OpenAI chat.completion (malformed JSON, no choices).
  ChatReply complete(const std::vector<Message>& messages);

  /// The request body complete() would send for `messages` (for tests and `doctor`).
  nlohmann::json request_body(const std::vector<Message>& messages) const;

  /// Accounting so far (a consistent snapshot).
  ChatTotals totals() const;

  const ModelEndpoint& endpoint() const { return ep_; }

 private:
  ModelEndpoint ep_;
  std::string api_key_;
  std::shared_ptr<RateLimiter> limiter_;
  mutable std::mutex mu_;
  ChatTotals totals_;
};

}  // namespace spade::evaldual
