#include "evaldual/model_client.h"

#include <curl/curl.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <random>
#include <thread>

#include "common/error.h"
#include "common/strings.h"
#include "evaldual/rate_limiter.h"

using nlohmann::json;

namespace spade::evaldual {
namespace {

constexpr size_t kMaxBodyBytes = 64u << 20;  // a reply larger than this is cut (and then malformed)

void global_init() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) throw Error("model client: curl_global_init failed");
  });
}

size_t on_body(char* data, size_t size, size_t n, void* user) {
  auto* out = static_cast<std::string*>(user);
  size_t len = size * n;
  if (out->size() + len > kMaxBodyBytes) return 0;  // aborts the transfer (CURLE_WRITE_ERROR)
  out->append(data, len);
  return len;
}

// One HTTP attempt.
struct Attempt {
  CURLcode code = CURLE_OK;
  std::string curl_error;
  long status = 0;
  std::string body;
  double retry_after_s = 0.0;  // 0: no Retry-After header
};

Attempt post_json(const std::string& url, const std::string& api_key, const std::string& body, const ModelEndpoint& ep) {
  Attempt a;
  CURL* h = curl_easy_init();
  if (!h) throw Error("model endpoint '" + ep.name + "': curl_easy_init failed");
  char err[CURL_ERROR_SIZE] = {0};
  curl_slist* headers = nullptr;
  headers = curl_slist_append(headers, "Content-Type: application/json");
  headers = curl_slist_append(headers, "Accept: application/json");
  if (!api_key.empty()) headers = curl_slist_append(headers, ("Authorization: Bearer " + api_key).c_str());
  curl_easy_setopt(h, CURLOPT_URL, url.c_str());
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(h, CURLOPT_POST, 1L);
  curl_easy_setopt(h, CURLOPT_POSTFIELDS, body.data());
  curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &a.body);
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, err);
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);  // threads: no SIGALRM-based DNS timeouts
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(ep.connect_timeout_s * 1000));
  curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, static_cast<long>(ep.timeout_s * 1000));
  curl_easy_setopt(h, CURLOPT_ACCEPT_ENCODING, "");  // any encoding libcurl supports
  curl_easy_setopt(h, CURLOPT_USERAGENT, "spade-duel/1");
  a.code = curl_easy_perform(h);
  if (a.code != CURLE_OK) a.curl_error = err[0] ? err : curl_easy_strerror(a.code);
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &a.status);
  curl_off_t ra = 0;
  if (curl_easy_getinfo(h, CURLINFO_RETRY_AFTER, &ra) == CURLE_OK && ra > 0) a.retry_after_s = static_cast<double>(ra);
  curl_slist_free_all(headers);
  curl_easy_cleanup(h);
  return a;
}

bool retryable_transport(CURLcode c) {
  switch (c) {
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_COULDNT_CONNECT:
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
      return true;
    default:
      return false;
  }
}

bool retryable_status(long s) { return s == 408 || s == 429 || s >= 500; }

// The server's error message from an error body ({"error": {"message"}}, {"error": "..."}, {"message"}),
// else the body's first 300 bytes.
std::string server_message(const std::string& body) {
  json j = json::parse(body, nullptr, false);
  if (!j.is_discarded() && j.is_object()) {
    if (j.contains("error")) {
      const json& e = j["error"];
      if (e.is_string()) return e.get<std::string>();
      if (e.is_object() && e.contains("message") && e["message"].is_string()) return e["message"].get<std::string>();
      return e.dump();
    }
    if (j.contains("message") && j["message"].is_string()) return j["message"].get<std::string>();
  }
  std::string t = trim(truncate_utf8(body, 300));
  return t.empty() ? "(empty body)" : t;
}

std::string scrub(std::string s, const std::string& secret) {
  if (secret.empty()) return s;
  for (size_t p = s.find(secret); p != std::string::npos; p = s.find(secret, p + 3)) s.replace(p, secret.size(), "***");
  return s;
}

double backoff_seconds(const ModelEndpoint& ep, int retry, double retry_after_s) {
  if (retry_after_s > 0) return std::min(retry_after_s, ep.backoff_cap_s);
  double d = std::min(ep.backoff_cap_s, ep.backoff_base_s * std::pow(2.0, retry));
  thread_local std::mt19937_64 rng{std::random_device{}()};
  return d / 2 + std::uniform_real_distribution<double>(0.0, d / 2)(rng);
}

// Sets body[path] where path is "a" or "a.b" (nested objects are created).
void set_path(json& body, const std::string& path, const json& value) {
  json* cur = &body;
  std::vector<std::string> parts = split(path, '.');
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    json& next = (*cur)[parts[i]];
    if (!next.is_object()) next = json::object();
    cur = &next;
  }
  (*cur)[parts.back()] = value;
}

}  // namespace

std::string ModelEndpoint::url() const {
  std::string b = base_url;
  while (!b.empty() && b.back() == '/') b.pop_back();
  return b + "/chat/completions";
}

ChatClient::ChatClient(ModelEndpoint endpoint) : ep_(std::move(endpoint)) {
  global_init();
  std::string who = "model endpoint '" + ep_.name + "'";
  if (ep_.base_url.empty()) throw Error(who + ": base_url is empty (e.g. https://openrouter.ai/api/v1)");
  if (!starts_with(ep_.base_url, "http://") && !starts_with(ep_.base_url, "https://"))
    throw Error(who + ": base_url '" + ep_.base_url + "' must start with http:// or https://");
  if (ep_.model.empty()) throw Error(who + ": model is empty (the provider's model id)");
  if (!(ep_.timeout_s > 0) || !(ep_.connect_timeout_s > 0))
    throw Error(who + ": timeout_s and connect_timeout_s must be > 0 seconds");
  if (ep_.max_retries < 0) throw Error(who + ": max_retries must be >= 0");
  if (ep_.backoff_base_s < 0 || ep_.backoff_cap_s < 0) throw Error(who + ": backoff_base_s and backoff_cap_s must be >= 0");
  if (ep_.price_input_per_m < 0 || ep_.price_output_per_m < 0) throw Error(who + ": prices must be >= 0 USD per 1M tokens");
  if (ep_.effort_field.empty()) throw Error(who + ": effort_field is empty (e.g. reasoning_effort or reasoning.effort)");
  if (!ep_.extra_body.is_object()) throw Error(who + ": extra_body must be a JSON object");
  if (!ep_.api_key_env.empty()) {
    const char* k = std::getenv(ep_.api_key_env.c_str());
    if (!k || !*k)
      throw Error(who + ": environment variable " + ep_.api_key_env +
                  " (api_key_env) is unset or empty; export it, or set api_key_env: \"\" for a server without keys");
    api_key_ = k;
  }
  limiter_ = RateLimiter::shared(ep_.model + "|" + ep_.provider, ep_.requests_per_minute);
}

json ChatClient::request_body(const std::vector<Message>& messages) const {
  json msgs = json::array();
  for (const auto& m : messages) msgs.push_back({{"role", m.role}, {"content", m.content}});
  json body = {{"model", ep_.model}, {"messages", msgs}};
  if (ep_.max_tokens > 0) body["max_tokens"] = ep_.max_tokens;
  if (ep_.temperature) body["temperature"] = *ep_.temperature;
  if (!ep_.reasoning_effort.empty()) set_path(body, ep_.effort_field, ep_.reasoning_effort);
  body.merge_patch(ep_.extra_body);
  return body;
}

ChatReply ChatClient::complete(const std::vector<Message>& messages) {
  using clock = std::chrono::steady_clock;
  auto start = clock::now();
  const std::string url = ep_.url();
  const std::string body = request_body(messages).dump();
  const std::string where = "model endpoint '" + ep_.name + "' (POST " + url + ")";
  int attempts = 0;
  auto fail = [&](const std::string& what) -> Error {
    std::lock_guard<std::mutex> lock(mu_);
    totals_.failed_calls++;
    totals_.attempts += attempts;
    totals_.retries += std::max(0, attempts - 1);
    return Error(scrub(where + ": " + what, api_key_));
  };
  for (int retry = 0;; ++retry) {
    if (limiter_) limiter_->acquire();
    ++attempts;
    Attempt a = post_json(url, api_key_, body, ep_);
    std::string problem;  // set when this attempt failed in a retryable way
    if (a.code != CURLE_OK) {
      std::string what = (a.code == CURLE_OPERATION_TIMEDOUT ? "timed out (timeout_s " + std::to_string(ep_.timeout_s) + ")"
                                                             : "transport error") +
                         ": " + a.curl_error;
      if (!retryable_transport(a.code)) throw fail(what + " (not retried)");
      problem = what;
    } else if (a.status < 200 || a.status >= 300) {
      std::string what = "HTTP " + std::to_string(a.status) + ": " + server_message(a.body);
      if (!retryable_status(a.status)) throw fail(what + " (client error; not retried)");
      problem = what;
    } else {
      json j = json::parse(a.body, nullptr, false);
      if (j.is_discarded() || !j.is_object())
        throw fail("HTTP " + std::to_string(a.status) + " but the body is not a JSON object: " + server_message(a.body));
      if (!j.contains("choices") && j.contains("error")) {  // OpenRouter-style error inside a 200
        long code = j["error"].is_object() && j["error"].value("code", json()).is_number_integer()
                        ? j["error"]["code"].get<long>() : 0;
        std::string what = "error in a 200 body (code " + std::to_string(code) + "): " + server_message(a.body);
        if (!retryable_status(code)) throw fail(what + " (not retried)");
        problem = what;
      } else {
        const json* choice = nullptr;
        if (j.contains("choices") && j["choices"].is_array() && !j["choices"].empty() && j["choices"][0].is_object())
          choice = &j["choices"][0];
        if (!choice || !choice->contains("message") || !(*choice)["message"].is_object())
          throw fail("malformed chat.completion: no choices[0].message in " + server_message(a.body));
        const json& msg = (*choice)["message"];
        ChatReply r;
        if (msg.contains("content") && !msg["content"].is_null()) {
          if (!msg["content"].is_string()) throw fail("malformed chat.completion: choices[0].message.content is not a string");
          r.content = msg["content"].get<std::string>();
        }
        if (choice->contains("finish_reason") && (*choice)["finish_reason"].is_string())
          r.finish_reason = (*choice)["finish_reason"].get<std::string>();
        if (j.contains("model") && j["model"].is_string()) r.model = j["model"].get<std::string>();
        ChatUsage& u = r.usage;
        if (j.contains("usage") && j["usage"].is_object()) {
          const json& us = j["usage"];
          auto num = [&](const char* k) -> int64_t {
            return us.contains(k) && us[k].is_number() ? us[k].get<int64_t>() : 0;
          };
          u.usage_reported = true;
          u.prompt_tokens = num("prompt_tokens");
          u.completion_tokens = num("completion_tokens");
          u.total_tokens = us.contains("total_tokens") ? num("total_tokens") : u.prompt_tokens + u.completion_tokens;
          if (us.contains("cost") && us["cost"].is_number()) {
            u.cost_reported = true;
            u.cost_usd = us["cost"].get<double>();
          }
        }
        if (!u.cost_reported)
          u.cost_usd = (static_cast<double>(u.prompt_tokens) * ep_.price_input_per_m +
                        static_cast<double>(u.completion_tokens) * ep_.price_output_per_m) / 1e6;
        u.retries = attempts - 1;
        u.latency_s = std::chrono::duration<double>(clock::now() - start).count();
        std::lock_guard<std::mutex> lock(mu_);
        totals_.calls++;
        totals_.attempts += attempts;
        totals_.retries += u.retries;
        totals_.prompt_tokens += u.prompt_tokens;
        totals_.completion_tokens += u.completion_tokens;
        totals_.cost_usd += u.cost_usd;
        totals_.latency_s += u.latency_s;
        return r;
      }
    }
    if (retry >= ep_.max_retries)
      throw fail(problem + " (gave up after " + std::to_string(attempts) + " attempts; max_retries " +
                 std::to_string(ep_.max_retries) + ")");
    std::this_thread::sleep_for(std::chrono::duration<double>(backoff_seconds(ep_, retry, a.retry_after_s)));
  }
}

ChatTotals ChatClient::totals() const {
  std::lock_guard<std::mutex> lock(mu_);
  return totals_;
}

}  // namespace spade::evaldual
