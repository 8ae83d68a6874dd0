#include "serve/api_response.h"

namespace spade::serve {

using json = nlohmann::ordered_json;

namespace {
json null_if_empty(const std::string& s) { return s.empty() ? json(nullptr) : json(s); }

json bytes_of(const std::string& s) {
  json b = json::array();
  for (unsigned char c : s) b.push_back(static_cast<int>(c));
  return b;
}
}  // namespace

json error_json(const ApiError& e) {
  return {{"error", {{"message", e.what()}, {"type", e.type}, {"param", null_if_empty(e.param)},
                     {"code", null_if_empty(e.code)}}}};
}

std::string dump_json(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

std::string sse_event(const json& payload) { return "data: " + dump_json(payload) + "\n\n"; }

json chat_logprobs(const std::vector<TokenInfo>& tokens) {
  json content = json::array();
  for (const TokenInfo& t : tokens) {
    json top = json::array();
    for (const auto& [text, lp] : t.top) top.push_back({{"token", text}, {"logprob", lp}, {"bytes", bytes_of(text)}});
    content.push_back({{"token", t.text}, {"logprob", t.logprob}, {"bytes", bytes_of(t.text)}, {"top_logprobs", top}});
  }
  return {{"content", content}};
}

json completion_logprobs(const std::vector<TokenInfo>& tokens, bool with_top, size_t offset) {
  json texts = json::array(), lps = json::array(), tops = json::array(), offsets = json::array();
  for (const TokenInfo& t : tokens) {
    texts.push_back(t.text);
    lps.push_back(t.logprob);
    offsets.push_back(offset);
    offset += t.text.size();
    json top = json::object();
    for (const auto& [text, lp] : t.top) top[text] = lp;
    tops.push_back(top);
  }
  return {{"tokens", texts}, {"token_logprobs", lps}, {"top_logprobs", with_top ? tops : json(nullptr)},
          {"text_offset", offsets}};
}

json usage_json(int64_t prompt_tokens, int64_t completion_tokens) {
  return {{"prompt_tokens", prompt_tokens}, {"completion_tokens", completion_tokens},
          {"total_tokens", prompt_tokens + completion_tokens}};
}

json response_head(const std::string& id, const char* object, int64_t created, const std::string& model) {
  return {{"id", id}, {"object", object}, {"created", created}, {"model", model}};
}

namespace {
/// A tool call as OpenAI writes it; with index >= 0, as a stream delta writes it (its position first).
json tool_call_json(const ReplyToolCall& call, int index) {
  json c = index >= 0 ? json{{"index", index}} : json::object();
  c["id"] = call.id;
  c["type"] = "function";
  c["function"] = {{"name", call.name}, {"arguments", call.arguments}};
  return c;
}
}  // namespace

json tool_calls_delta(const std::vector<ReplyToolCall>& calls) {
  json list = json::array();
  for (size_t k = 0; k < calls.size(); ++k) list.push_back(tool_call_json(calls[k], static_cast<int>(k)));
  return {{"tool_calls", list}};
}

json chat_choice(int index, const std::string& content, const std::vector<ReplyToolCall>& calls, const json& logprobs,
                 const std::string& finish_reason) {
  json message = {{"role", "assistant"}, {"content", calls.empty() ? json(content) : null_if_empty(content)}};
  if (!calls.empty()) {
    message["tool_calls"] = json::array();
    for (const ReplyToolCall& c : calls) message["tool_calls"].push_back(tool_call_json(c, -1));
  }
  return {{"index", index}, {"message", message}, {"logprobs", logprobs}, {"finish_reason", finish_reason}};
}

json chat_chunk_choice(int index, const json& delta, const json& logprobs, const std::string& finish_reason) {
  return {{"index", index}, {"delta", delta}, {"logprobs", logprobs}, {"finish_reason", null_if_empty(finish_reason)}};
}

json completion_choice(int index, const std::string& text, const json& logprobs, const std::string& finish_reason) {
  return {{"index", index}, {"text", text}, {"logprobs", logprobs}, {"finish_reason", null_if_empty(finish_reason)}};
}

}  // namespace spade::serve
