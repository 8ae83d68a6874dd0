#include "policy/chat_formats.h"

#include <algorithm>
#include <optional>

#include "common/error.h"

namespace spade::policy {

namespace {

// Qwen3 template: `tool | tojson` of a tool, and `tool_call.arguments | tojson` (Jinja's tojson sorts
// no keys and uses ", " / ": " separators, as json.dumps).
std::string tojson(const nlohmann::ordered_json& j) {
  if (j.is_object()) {
    std::string s = "{";
    bool first = true;
    for (auto it = j.begin(); it != j.end(); ++it) {
      if (!first) s += ", ";
      first = false;
      s += nlohmann::ordered_json(it.key()).dump() + ": " + tojson(it.value());
    }
    return s + "}";
  }
  if (j.is_array()) {
    std::string s = "[";
    for (size_t i = 0; i < j.size(); ++i) s += (i ? ", " : "") + tojson(j[i]);
    return s + "]";
  }
  return j.dump();
}

// kChatML (Qwen3 template) and, with qwen2 = true, kQwen2 (Qwen2.5 template): chat_formats.h.
std::string render_chatml(const std::vector<RichMessage>& msgs, const ChatRenderOptions& o, bool qwen2) {
  std::string out;
  size_t start = 0;
  const bool has_system = !msgs.empty() && msgs[0].role == "system";
  if (!o.tools.empty()) {
    std::optional<std::string> system;  // Qwen3 writes no system text without a system message
    if (has_system) system = msgs[0].content;
    else if (qwen2) system = o.default_system;
    start = has_system ? 1 : 0;
    out += "<|im_start|>system\n" + qwen_tools_system(system, o.tools) + "<|im_end|>\n";
  } else if (qwen2) {
    out += "<|im_start|>system\n" + (has_system ? msgs[0].content : o.default_system) + "<|im_end|>\n";
    start = has_system ? 1 : 0;
  }
  // Index of the last user message that is not a tool response: earlier assistant turns drop their
  // reasoning (Qwen3's last_query_index rule; Qwen2.5 keeps every assistant content verbatim).
  size_t last_query = 0;
  if (!qwen2)
    for (size_t i = 0; i < msgs.size(); ++i)
      if (msgs[i].role == "user") last_query = i;
  for (size_t i = start; i < msgs.size(); ++i) {
    const RichMessage& m = msgs[i];
    if (m.role == "tool") {
      if (i == start || msgs[i - 1].role != "tool") out += "<|im_start|>user";
      out += "\n" + qwen_tool_response(m.content);
      if (i + 1 == msgs.size() || msgs[i + 1].role != "tool") out += "<|im_end|>\n";
      continue;
    }
    const std::string content = m.role == "assistant" && i < last_query ? qwen3_history_content(m.content) : m.content;
    out += "<|im_start|>" + m.role + "\n" + qwen_assistant_content(content, m.tool_calls) + "<|im_end|>\n";
  }
  if (o.add_generation_prompt) {
    out += "<|im_start|>assistant\n";
    if (!o.enable_thinking && !qwen2) out += "<think>\n\n</think>\n\n";
  }
  return out;
}

void require_plain(const std::vector<RichMessage>& msgs, const ChatRenderOptions& o, const char* fmt) {
  if (!o.tools.empty()) throw spade::Error(std::string("render_chat: tools are not supported by the ") + fmt + " format");
  for (const auto& m : msgs) {
    if (m.role != "system" && m.role != "user" && m.role != "assistant" && m.role != "tool")
      throw spade::Error(std::string("render_chat: role '") + m.role + "' is not supported by the " + fmt + " format");
    if (!m.tool_calls.empty())
      throw spade::Error(std::string("render_chat: tool calls are not supported by the ") + fmt + " format");
  }
}

// Llama 3 / Llama 2 / Mistral have no tool role: a tool result is a user message (chat_formats.h).
std::string plain_role(const std::string& role) { return role == "tool" ? "user" : role; }

// tokenizer_config.json "chat_template": a string, or the "default" entry of a list of {name, template};
// "" when absent.
std::string chat_template_text(const nlohmann::json& cfg) {
  if (!cfg.is_object() || !cfg.contains("chat_template")) return "";
  const auto& t = cfg.at("chat_template");
  if (t.is_string()) return t.get<std::string>();
  std::string tmpl;
  if (t.is_array())
    for (const auto& e : t)
      if (e.is_object() && e.value("name", "") == "default" && e.contains("template") && e.at("template").is_string())
        tmpl = e.at("template").get<std::string>();
  return tmpl;
}

std::vector<std::string> roles_of(const std::vector<RichMessage>& msgs) {
  std::vector<std::string> roles;
  for (const RichMessage& m : msgs) roles.push_back(m.role);
  return roles;
}

}  // namespace

std::string template_trim(const std::string& s) {
  const char* ws = " \t\n\r";
  const size_t b = s.find_first_not_of(ws);
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(ws) - b + 1);
}

std::string qwen_tools_system(const std::optional<std::string>& system, const std::vector<nlohmann::ordered_json>& tools) {
  std::string out = system ? *system + "\n\n" : "";
  out += "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
         "You are provided with function signatures within <tools></tools> XML tags:\n<tools>";
  for (const auto& t : tools) out += "\n" + tojson(t);
  out += "\n</tools>\n\nFor each function call, return a json object with function name and arguments within "
         "<tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": "
         "<args-json-object>}\n</tool_call>";
  return out;
}

std::vector<ChatMessage> tool_use_opening(ChatFormat format, const std::string& system, const std::string& user,
                                          const std::vector<nlohmann::ordered_json>& tools) {
  switch (format) {
    case ChatFormat::kChatML:
    case ChatFormat::kQwen2:
      return {{"system", qwen_tools_system(system, tools)}, {"user", user}};
    case ChatFormat::kLlama3: {
      std::string first = "Given the following functions, please respond with a JSON for a function call with its "
                          "proper arguments that best answers the given prompt.\n\nRespond in the format {\"name\": "
                          "function name, \"parameters\": dictionary of argument name and its value}.Do not use "
                          "variables.\n\n";
      for (const auto& t : tools) first += t.dump(4) + "\n\n";
      return {{"system", "Environment: ipython\nCutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n\n" +
                             template_trim(system)},
              {"user", first + template_trim(user)}};
    }
    case ChatFormat::kLlama2:
    case ChatFormat::kMistral:
      break;
  }
  throw Error(std::string("the ") + chat_format_name(format) +
              " chat format has no tool calling (its template renders no tools): tool-use environments need a "
              "checkpoint whose chat template does (ChatML / Qwen2.5 / Qwen3, or Llama 3.1)");
}

std::string tool_result_role(ChatFormat format) { return format == ChatFormat::kLlama3 ? "ipython" : "tool"; }

std::string qwen_assistant_content(const std::string& content, const std::vector<ToolCall>& calls) {
  std::string out = content;
  for (size_t k = 0; k < calls.size(); ++k) {
    if (k > 0 || !content.empty()) out += "\n";
    out += "<tool_call>\n{\"name\": " + nlohmann::json(calls[k].name).dump() + ", \"arguments\": " +
           tojson(calls[k].arguments) + "}\n</tool_call>";
  }
  return out;
}

std::string qwen_tool_response(const std::string& result) { return "<tool_response>\n" + result + "\n</tool_response>"; }

std::string qwen3_history_content(const std::string& content) {
  const size_t end = content.rfind("</think>");
  if (end == std::string::npos) return content;
  std::string after = content.substr(end + 8);
  after.erase(0, std::min(after.find_first_not_of('\n'), after.size()));
  return after;
}

void require_alternation(const std::vector<std::string>& roles, size_t start, const std::string& context) {
  for (size_t i = start; i < roles.size(); ++i)
    if (plain_role(roles[i]) != ((i - start) % 2 == 0 ? "user" : "assistant"))
      throw spade::Error(context + " conversations must alternate user/assistant/user/... after an optional "
                         "leading system message (message " + std::to_string(i) + " is '" + roles[i] + "')");
}

const char* chat_format_name(ChatFormat f) {
  switch (f) {
    case ChatFormat::kChatML: return "chatml";
    case ChatFormat::kLlama3: return "llama3";
    case ChatFormat::kLlama2: return "llama2";
    case ChatFormat::kMistral: return "mistral";
    case ChatFormat::kQwen2: return "qwen2";
  }
  return "?";
}

std::string end_of_turn(ChatFormat f) {
  switch (f) {
    case ChatFormat::kChatML:
    case ChatFormat::kQwen2: return "<|im_end|>";
    case ChatFormat::kLlama3: return "<|eot_id|>";
    default: return "</s>";
  }
}

std::string render_chat(ChatFormat format, const std::vector<RichMessage>& msgs, const ChatRenderOptions& o) {
  switch (format) {
    case ChatFormat::kChatML:
      return render_chatml(msgs, o, /*qwen2=*/false);
    case ChatFormat::kQwen2:
      return render_chatml(msgs, o, /*qwen2=*/true);
    case ChatFormat::kLlama3: {
      require_plain(msgs, o, "llama3");
      std::string out = "<|begin_of_text|>";
      for (const auto& m : msgs)
        out += "<|start_header_id|>" + plain_role(m.role) + "<|end_header_id|>\n\n" + template_trim(m.content) + "<|eot_id|>";
      if (o.add_generation_prompt) out += "<|start_header_id|>assistant<|end_header_id|>\n\n";
      return out;
    }
    case ChatFormat::kLlama2: {
      require_plain(msgs, o, "llama2");
      const bool sys = !msgs.empty() && msgs[0].role == "system";
      const size_t start = sys ? 1 : 0;
      require_alternation(roles_of(msgs), start, "render_chat: llama2");
      std::string out;
      for (size_t i = start; i < msgs.size(); ++i) {
        const RichMessage& m = msgs[i];
        if (plain_role(m.role) == "user") {
          std::string content = m.content;
          if (sys && i == start) content = "<<SYS>>\n" + msgs[0].content + "\n<</SYS>>\n\n" + content;
          out += "<s>[INST] " + template_trim(content) + " [/INST]";
        } else {
          out += " " + template_trim(m.content) + " </s>";
        }
      }
      return out;  // the template has no separate generation prompt: "[/INST]" opens the answer
    }
    case ChatFormat::kMistral: {
      require_plain(msgs, o, "mistral");
      const bool sys = !msgs.empty() && msgs[0].role == "system";
      const size_t start = sys ? 1 : 0;
      require_alternation(roles_of(msgs), start, "render_chat: mistral");
      std::string out = "<s>";
      for (size_t i = start; i < msgs.size(); ++i) {
        const RichMessage& m = msgs[i];
        if (plain_role(m.role) == "user") {
          std::string content = m.content;
          if (sys && i == start) content = msgs[0].content + "\n\n" + content;
          out += "[INST] " + content + " [/INST]";
        } else {
          out += m.content + "</s>";
        }
      }
      return out;
    }
  }
  throw spade::Error("render_chat: unknown format");
}

std::string chatml_default_system(const nlohmann::json& cfg) {
  const std::string tmpl = chat_template_text(cfg);
  // The literal's opening as the Jinja source writes it: "\n" escaped (Qwen) or a real newline.
  for (const std::string& open : {std::string("<|im_start|>system\\n"), std::string("<|im_start|>system\n")}) {
    for (size_t p = tmpl.find(open); p != std::string::npos; p = tmpl.find(open, p + 1)) {
      const size_t begin = p + open.size();
      const size_t end = tmpl.find("<|im_end|>", begin);
      if (end == std::string::npos || end == begin) continue;
      std::string text;
      bool literal = true;
      for (size_t i = begin; i < end && literal; ++i) {
        const char c = tmpl[i];
        if (c == '\\' && i + 1 < end) {
          const char e = tmpl[++i];
          switch (e) {
            case 'n': text += '\n'; break;
            case 't': text += '\t'; break;
            case 'r': text += '\r'; break;
            case '\\': case '\'': case '"': text += e; break;
            default: literal = false;  // an escape this reader does not decode: not taken as a default
          }
        } else if (c == '\'' || c == '"' || c == '{' || c == '}' || c == '\\') {
          literal = false;  // the string closes (an expression follows) or Jinja markup: not one literal
        } else {
          text += c;
        }
      }
      if (literal) return text;
    }
  }
  return "";
}

ChatFormat detect_chat_format(const nlohmann::json& cfg, const std::string& model_type, int64_t vocab_size) {
  const std::string tmpl = chat_template_text(cfg);
  if (!tmpl.empty()) {
    if (tmpl.find("<|im_start|>") != std::string::npos)
      return chatml_default_system(cfg).empty() ? ChatFormat::kChatML : ChatFormat::kQwen2;
    if (tmpl.find("<|start_header_id|>") != std::string::npos) return ChatFormat::kLlama3;
    if (tmpl.find("<<SYS>>") != std::string::npos) return ChatFormat::kLlama2;
    if (tmpl.find("[INST]") != std::string::npos) return ChatFormat::kMistral;
  }
  if (model_type == "qwen2") return ChatFormat::kQwen2;  // Qwen2 / Qwen2.5 (Qwen3 is "qwen3")
  if (model_type.rfind("qwen", 0) == 0) return ChatFormat::kChatML;
  if (model_type == "llama") return vocab_size >= 128000 ? ChatFormat::kLlama3 : ChatFormat::kLlama2;
  if (model_type == "mistral") return ChatFormat::kMistral;
  return ChatFormat::kChatML;
}

}  // namespace spade::policy
