#include "serve/api_request.h"

#include <cmath>
#include <limits>

namespace spade::serve {

using json = nlohmann::ordered_json;

ApiError::ApiError(int status_, const std::string& message, std::string param_, std::string code_, std::string type_)
    : std::runtime_error(message),
      status(status_),
      type(type_.empty() ? (status_ < 500 ? "invalid_request_error" : "server_error") : std::move(type_)),
      param(std::move(param_)),
      code(std::move(code_)) {}

namespace {

ApiError bad(const std::string& param, const std::string& message) { return ApiError(400, message, param); }

json parse_body(const std::string& body) {
  json j;
  try {
    j = json::parse(body);
  } catch (const json::parse_error& e) {
    throw ApiError(400, std::string("the request body is not valid JSON: ") + e.what());
  }
  if (!j.is_object()) throw ApiError(400, "the request body must be a JSON object, not " + std::string(j.type_name()));
  return j;
}

/// j[key] when present and not null, else nullptr.
const json* field(const json& j, const char* key) {
  auto it = j.find(key);
  return it == j.end() || it->is_null() ? nullptr : &*it;
}

double number(const json& j, const char* key, double def, double lo, double hi) {
  const json* v = field(j, key);
  if (!v) return def;
  if (!v->is_number()) throw bad(key, std::string("'") + key + "' must be a number, not " + v->type_name());
  const double x = v->get<double>();
  if (!(x >= lo && x <= hi))
    throw bad(key, std::string("'") + key + "' must be in [" + json(lo).dump() + ", " + json(hi).dump() + "], not " +
                       v->dump());
  return x;
}

int64_t integer(const json& j, const char* key, int64_t def, int64_t lo, int64_t hi) {
  const json* v = field(j, key);
  if (!v) return def;
  if (!v->is_number_integer()) throw bad(key, std::string("'") + key + "' must be an integer, not " + v->dump());
  const int64_t x = v->is_number_unsigned() && v->get<uint64_t>() > static_cast<uint64_t>(hi) ? hi + 1 : v->get<int64_t>();
  if (x < lo || x > hi)
    throw bad(key, std::string("'") + key + "' must be in [" + std::to_string(lo) + ", " + std::to_string(hi) +
                       "], not " + v->dump());
  return x;
}

bool boolean(const json& j, const char* key, bool def) {
  const json* v = field(j, key);
  if (!v) return def;
  if (!v->is_boolean()) throw bad(key, std::string("'") + key + "' must be true or false, not " + v->dump());
  return v->get<bool>();
}

std::string string_field(const json& j, const char* key, const std::string& where) {
  const json* v = field(j, key);
  if (!v || !v->is_string()) throw bad(where, "'" + where + "' must be a string");
  return v->get<std::string>();
}

/// A field spade does not implement: refused unless absent or set to its no-op value.
void refuse_unless(const json& j, const char* key, bool is_noop, const std::string& what) {
  const json* v = field(j, key);
  if (v && !is_noop) throw bad(key, std::string("'") + key + "' is not supported by this server (" + what + ")");
}

void refuse_features(const json& j) {
  auto zero = [&](const char* k) {
    const json* v = field(j, k);
    return !v || (v->is_number() && v->get<double>() == 0);
  };
  refuse_unless(j, "frequency_penalty", zero("frequency_penalty"), "no penalties; leave it 0");
  refuse_unless(j, "presence_penalty", zero("presence_penalty"), "no penalties; leave it 0");
  const json* rp = field(j, "repetition_penalty");
  refuse_unless(j, "repetition_penalty", !rp || (rp->is_number() && rp->get<double>() == 1), "no penalties; leave it 1");
  const json* lb = field(j, "logit_bias");
  refuse_unless(j, "logit_bias", !lb || (lb->is_object() && lb->empty()), "no logit bias");
  const json* rf = field(j, "response_format");
  refuse_unless(j, "response_format", !rf || (rf->is_object() && rf->value("type", "") == "text"),
                "only {\"type\": \"text\"}: no constrained decoding");
}

SamplingFields sampling_fields(const json& j) {
  SamplingFields s;
  s.temperature = number(j, "temperature", 1.0, 0.0, 2.0);
  if (s.temperature < 1e-5) s.temperature = 0;  // vLLM's _SAMPLING_EPS: greedy below it
  s.top_p = number(j, "top_p", 1.0, 0.0, 1.0);
  if (s.top_p <= 0) throw bad("top_p", "'top_p' must be in (0, 1], not 0");
  s.top_k = static_cast<int>(integer(j, "top_k", 0, -1, std::numeric_limits<int>::max()));
  if (s.top_k < 0) s.top_k = 0;  // vLLM: -1 = off
  s.min_p = number(j, "min_p", 0.0, 0.0, 1.0);
  if (const json* stop = field(j, "stop")) {
    if (stop->is_string()) {
      s.stop.push_back(stop->get<std::string>());
    } else if (stop->is_array()) {
      if (stop->size() > 4) throw bad("stop", "'stop' holds at most 4 sequences, not " + std::to_string(stop->size()));
      for (const json& e : *stop) {
        if (!e.is_string()) throw bad("stop", "'stop' must be a string or a list of strings");
        s.stop.push_back(e.get<std::string>());
      }
    } else {
      throw bad("stop", "'stop' must be a string or a list of strings");
    }
    for (const std::string& x : s.stop)
      if (x.empty()) throw bad("stop", "'stop' sequences must not be empty");
  }
  if (const json* seed = field(j, "seed")) {
    if (!seed->is_number_integer()) throw bad("seed", "'seed' must be an integer, not " + seed->dump());
    s.seed = seed->is_number_unsigned() ? seed->get<uint64_t>() : static_cast<uint64_t>(seed->get<int64_t>());
  }
  s.n = static_cast<int>(integer(j, "n", 1, 1, 128));
  s.stream = boolean(j, "stream", false);
  s.ignore_eos = boolean(j, "ignore_eos", false);
  if (const json* so = field(j, "stream_options")) {
    if (!so->is_object()) throw bad("stream_options", "'stream_options' must be an object");
    if (!s.stream) throw bad("stream_options", "'stream_options' is only allowed with 'stream': true");
    s.include_usage = boolean(*so, "include_usage", false);
  }
  return s;
}

/// A message's content: a string, null (""), or a list of text parts joined by "\n" (as vLLM).
std::string content_text(const json& m, const std::string& where, bool* is_null) {
  const json* c = field(m, "content");
  *is_null = c == nullptr;
  if (!c) return "";
  if (c->is_string()) return c->get<std::string>();
  if (!c->is_array()) throw bad(where, "'" + where + "' must be a string, null or a list of text parts");
  std::string text;
  for (size_t i = 0; i < c->size(); ++i) {
    const json& part = (*c)[i];
    const std::string pw = where + "[" + std::to_string(i) + "]";
    if (!part.is_object()) throw bad(pw, "'" + pw + "' must be an object {\"type\": \"text\", \"text\": ...}");
    const std::string type = part.value("type", "");
    if (type != "text") throw bad(pw, "content part type '" + type + "' is not supported (text only)");
    if (i > 0) text += "\n";
    text += string_field(part, "text", pw + ".text");
  }
  return text;
}

std::vector<policy::ToolCall> assistant_tool_calls(const json& m, const std::string& where) {
  std::vector<policy::ToolCall> calls;
  const json* tc = field(m, "tool_calls");
  if (!tc) return calls;
  if (!tc->is_array()) throw bad(where, "'" + where + "' must be a list");
  for (size_t k = 0; k < tc->size(); ++k) {
    const json& c = (*tc)[k];
    const std::string cw = where + "[" + std::to_string(k) + "]";
    if (!c.is_object() || c.value("type", "function") != "function" || !field(c, "function") || !c["function"].is_object())
      throw bad(cw, "'" + cw + "' must be {\"type\": \"function\", \"function\": {\"name\", \"arguments\"}}");
    const json& f = c["function"];
    policy::ToolCall call;
    call.name = string_field(f, "name", cw + ".function.name");
    call.arguments = json::object();
    if (const json* a = field(f, "arguments")) {
      if (a->is_string()) {
        try {
          call.arguments = json::parse(a->get<std::string>());
        } catch (const json::parse_error& e) {
          throw bad(cw + ".function.arguments", "'" + cw + ".function.arguments' is not valid JSON: " + e.what());
        }
      } else {
        call.arguments = *a;
      }
      if (!call.arguments.is_object())
        throw bad(cw + ".function.arguments", "'" + cw + ".function.arguments' must encode a JSON object");
    }
    calls.push_back(std::move(call));
  }
  return calls;
}

std::vector<policy::RichMessage> chat_messages(const json& j) {
  const json* ms = field(j, "messages");
  if (!ms || !ms->is_array() || ms->empty()) throw bad("messages", "'messages' must be a non-empty list");
  std::vector<policy::RichMessage> out;
  for (size_t i = 0; i < ms->size(); ++i) {
    const json& m = (*ms)[i];
    const std::string where = "messages[" + std::to_string(i) + "]";
    if (!m.is_object()) throw bad(where, "'" + where + "' must be an object");
    policy::RichMessage msg;
    msg.role = string_field(m, "role", where + ".role");
    if (msg.role == "developer") msg.role = "system";  // OpenAI's newer name for the system message
    if (msg.role != "system" && msg.role != "user" && msg.role != "assistant" && msg.role != "tool")
      throw bad(where + ".role", "'" + where + ".role' must be system, developer, user, assistant or tool, not '" +
                                     msg.role + "'");
    bool null_content = false;
    msg.content = content_text(m, where + ".content", &null_content);
    if (msg.role == "assistant") msg.tool_calls = assistant_tool_calls(m, where + ".tool_calls");
    if (null_content && !(msg.role == "assistant" && !msg.tool_calls.empty()))
      throw bad(where + ".content", "'" + where + ".content' is required (null only for an assistant message with tool_calls)");
    out.push_back(std::move(msg));
  }
  return out;
}

void chat_tools(const json& j, ChatRequest& r) {
  if (const json* tools = field(j, "tools")) {
    if (!tools->is_array()) throw bad("tools", "'tools' must be a list");
    for (size_t i = 0; i < tools->size(); ++i) {
      const json& t = (*tools)[i];
      const std::string where = "tools[" + std::to_string(i) + "]";
      if (!t.is_object() || t.value("type", "") != "function" || !field(t, "function") || !t["function"].is_object())
        throw bad(where, "'" + where + "' must be {\"type\": \"function\", \"function\": {\"name\", ...}}");
      if (string_field(t["function"], "name", where + ".function.name").empty())
        throw bad(where + ".function.name", "'" + where + ".function.name' must not be empty");
      r.tools.push_back(t);
    }
  }
  std::string choice = r.tools.empty() ? "none" : "auto";
  if (const json* tc = field(j, "tool_choice")) {
    if (!tc->is_string() || (tc->get<std::string>() != "auto" && tc->get<std::string>() != "none"))
      throw bad("tool_choice", "'tool_choice' must be \"auto\" or \"none\" (no forced tool calls), not " + tc->dump());
    choice = tc->get<std::string>();
  }
  r.tool_calls_enabled = !r.tools.empty() && choice == "auto";
  r.parallel_tool_calls = boolean(j, "parallel_tool_calls", true);
}

std::string model_field(const json& j) {
  const json* m = field(j, "model");
  if (!m || !m->is_string()) throw bad("model", "'model' is required (a string: GET /v1/models lists it)");
  return m->get<std::string>();
}

/// Token ids of a prompt list entry: integers >= 0 (the vocabulary bound is checked by the API).
std::vector<int64_t> id_list(const json& a, const std::string& where) {
  std::vector<int64_t> ids;
  for (const json& e : a) {
    if (!e.is_number_integer() || e.get<int64_t>() < 0)
      throw bad("prompt", "'" + where + "' token ids must be integers >= 0, not " + e.dump());
    ids.push_back(e.get<int64_t>());
  }
  return ids;
}

}  // namespace

ChatRequest parse_chat_request(const std::string& body) {
  const json j = parse_body(body);
  ChatRequest r;
  r.model = model_field(j);
  r.messages = chat_messages(j);
  chat_tools(j, r);
  refuse_features(j);
  r.sampling = sampling_fields(j);
  const int64_t cap = std::numeric_limits<int32_t>::max();
  if (field(j, "max_completion_tokens")) r.sampling.max_tokens = integer(j, "max_completion_tokens", 0, 1, cap);
  else if (field(j, "max_tokens")) r.sampling.max_tokens = integer(j, "max_tokens", 0, 1, cap);
  const bool logprobs = boolean(j, "logprobs", false);
  const int64_t top = integer(j, "top_logprobs", 0, 0, 20);
  if (field(j, "top_logprobs") && !logprobs)
    throw bad("top_logprobs", "'top_logprobs' needs 'logprobs': true");
  r.sampling.logprobs = logprobs ? static_cast<int>(top) : -1;
  return r;
}

CompletionRequest parse_completion_request(const std::string& body) {
  const json j = parse_body(body);
  CompletionRequest r;
  r.model = model_field(j);
  const json* p = field(j, "prompt");
  if (!p) throw bad("prompt", "'prompt' is required");
  if (p->is_string()) {
    r.prompts.push_back({p->get<std::string>(), {}, false});
  } else if (p->is_array() && !p->empty() && (*p)[0].is_number()) {
    r.prompts.push_back({"", id_list(*p, "prompt"), true});
  } else if (p->is_array() && !p->empty()) {
    for (size_t i = 0; i < p->size(); ++i) {
      const json& e = (*p)[i];
      const std::string where = "prompt[" + std::to_string(i) + "]";
      if (e.is_string()) r.prompts.push_back({e.get<std::string>(), {}, false});
      else if (e.is_array() && !e.empty()) r.prompts.push_back({"", id_list(e, where), true});
      else throw bad("prompt", "'" + where + "' must be a string or a non-empty list of token ids");
    }
  } else {
    throw bad("prompt", "'prompt' must be a string, a list of strings, or (lists of) token ids");
  }
  refuse_features(j);
  refuse_unless(j, "echo", !boolean(j, "echo", false), "the completion never repeats the prompt");
  const json* suffix = field(j, "suffix");
  refuse_unless(j, "suffix", !suffix || (suffix->is_string() && suffix->get<std::string>().empty()), "no insertion");
  refuse_unless(j, "best_of", integer(j, "best_of", 1, 1, 128) == 1, "no server-side best-of; use n");
  r.sampling = sampling_fields(j);
  r.sampling.max_tokens = integer(j, "max_tokens", 16, 1, std::numeric_limits<int32_t>::max());  // OpenAI's default 16
  if (field(j, "logprobs")) r.sampling.logprobs = static_cast<int>(integer(j, "logprobs", 0, 0, 20));
  return r;
}

}  // namespace spade::serve
