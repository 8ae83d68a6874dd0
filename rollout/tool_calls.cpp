#include "rollout/tool_calls.h"

#include "common/strings.h"
#include "rollout/parsing.h"

namespace spade::rollout {
namespace {

constexpr std::string_view kOpen = "<tool_call>", kClose = "</tool_call>";

// Removes the single newline a template puts after an opening tag and before a closing one.
std::string_view strip_template_newlines(std::string_view v) {
  if (!v.empty() && v.front() == '\n') v.remove_prefix(1);
  if (!v.empty() && v.back() == '\n') v.remove_suffix(1);
  return v;
}

nlohmann::json parameter_value(std::string_view raw) {
  std::string_view v = strip_template_newlines(raw);
  nlohmann::json parsed = nlohmann::json::parse(v.begin(), v.end(), nullptr, /*allow_exceptions=*/false);
  if (!parsed.is_discarded()) return parsed;
  return std::string(v);
}

ToolCall parse_json_form(const std::string& body) {
  ToolCall call;
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(body);
  } catch (const nlohmann::json::parse_error& e) {
    call.error = std::string("invalid JSON: ") + e.what();
    return call;
  }
  if (!j.is_object()) return ToolCall{"", {}, "the tool call is not a JSON object", ""};
  auto name = j.find("name");
  if (name == j.end() || !name->is_string() || name->get<std::string>().empty())
    return ToolCall{"", {}, "the tool call has no string \"name\"", ""};
  call.name = name->get<std::string>();
  auto args = j.find("arguments");
  if (args == j.end()) args = j.find("parameters");
  if (args == j.end() || args->is_null()) {
    call.arguments = nlohmann::json::object();
  } else if (args->is_object()) {
    call.arguments = *args;
  } else if (args->is_string()) {  // arguments JSON-encoded as a string (OpenAI wire form)
    nlohmann::json inner = nlohmann::json::parse(args->get<std::string>(), nullptr, false);
    if (!inner.is_object()) return ToolCall{call.name, {}, "\"arguments\" is a string but not a JSON object", ""};
    call.arguments = inner;
  } else {
    return ToolCall{call.name, {}, "\"arguments\" is not an object", ""};
  }
  return call;
}

ToolCall parse_xml_form(std::string_view body) {
  constexpr std::string_view kFn = "<function=", kFnEnd = "</function>", kParam = "<parameter=",
                             kParamEnd = "</parameter>";
  ToolCall call;
  size_t fn = body.find(kFn);
  size_t name_end = body.find('>', fn + kFn.size());
  if (name_end == std::string_view::npos) return ToolCall{"", {}, "<function=NAME> is not closed by '>'", ""};
  call.name = trim(body.substr(fn + kFn.size(), name_end - fn - kFn.size()));
  if (call.name.empty()) return ToolCall{"", {}, "<function=> has an empty name", ""};
  call.arguments = nlohmann::json::object();
  size_t end = body.find(kFnEnd, name_end);
  std::string_view params = body.substr(name_end + 1, end == std::string_view::npos ? std::string_view::npos
                                                                                   : end - name_end - 1);
  for (size_t p = params.find(kParam); p != std::string_view::npos; p = params.find(kParam, p)) {
    size_t key_end = params.find('>', p + kParam.size());
    if (key_end == std::string_view::npos) return ToolCall{call.name, {}, "<parameter=KEY> is not closed by '>'", ""};
    std::string key = trim(params.substr(p + kParam.size(), key_end - p - kParam.size()));
    if (key.empty()) return ToolCall{call.name, {}, "<parameter=> has an empty name", ""};
    size_t value_end = params.find(kParamEnd, key_end + 1);
    if (value_end == std::string_view::npos)
      return ToolCall{call.name, {}, "<parameter=" + key + "> is not closed by </parameter>", ""};
    call.arguments[key] = parameter_value(params.substr(key_end + 1, value_end - key_end - 1));
    p = value_end + kParamEnd.size();
  }
  return call;
}

}  // namespace

std::vector<ToolCall> parse_tool_calls(std::string_view response) {
  std::string_view text = after_last_think(response);
  std::vector<ToolCall> calls;
  for (size_t open = text.find(kOpen); open != std::string_view::npos; open = text.find(kOpen, open)) {
    size_t start = open + kOpen.size();
    size_t close = text.find(kClose, start);
    std::string_view body = text.substr(start, close == std::string_view::npos ? std::string_view::npos : close - start);
    std::string trimmed = trim(body);
    if (trimmed.rfind("<function=", 0) == 0) calls.push_back(parse_xml_form(trimmed));
    else if (!trimmed.empty() && trimmed.front() == '{') calls.push_back(parse_json_form(trimmed));
    else calls.push_back(ToolCall{"", {}, "neither a JSON object nor a <function=NAME> block", ""});
    calls.back().raw = trimmed;
    if (close == std::string_view::npos) break;
    open = close + kClose.size();
  }
  return calls;
}

std::vector<ToolCall> parse_llama3_tool_call(std::string_view response) {
  std::string text = trim(after_last_think(response));
  constexpr std::string_view kPythonTag = "<|python_tag|>";
  if (text.rfind(kPythonTag, 0) == 0) text = trim(std::string_view(text).substr(kPythonTag.size()));
  if (text.empty() || text.front() != '{') return {};
  ToolCall call = parse_json_form(text);
  call.raw = text;
  return {call};
}

std::string tool_call_action(const ToolCall& call) {
  if (!call.ok()) return std::string(kOpen) + call.raw + std::string(kClose);
  return std::string(kOpen) +
         nlohmann::json{{"name", call.name}, {"arguments", call.arguments}}.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) +
         std::string(kClose);
}

bool has_tool_call(std::string_view response) {
  return after_last_think(response).find(kOpen) != std::string_view::npos;
}

}  // namespace spade::rollout
