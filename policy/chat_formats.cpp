#include "policy/chat_formats.h"

#include <algorithm>

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

std::string render_chatml(const std::vector<RichMessage>& msgs, const ChatRenderOptions& o) {
  std::string out;
  size_t start = 0;
  if (!o.tools.empty()) {
    out += "<|im_start|>system\n";
    if (!msgs.empty() && msgs[0].role == "system") {
      out += msgs[0].content + "\n\n";
      start = 1;
    }
    out += "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
           "You are provided with function signatures within <tools></tools> XML tags:\n<tools>";
    for (const auto& t : o.tools) out += "\n" + tojson(t);
    out += "\n</tools>\n\nFor each function call, return a json object with function name and arguments within "
           "<tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": "
           "<args-json-object>}\n</tool_call><|im_end|>\n";
  }
  // Index of the last user message that is not a tool response: earlier assistant turns drop their
  // reasoning (Qwen3's last_query_index rule).
  size_t last_query = 0;
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
    out += "<|im_start|>" + m.role + "\n" + content;
    for (size_t k = 0; k < m.tool_calls.size(); ++k) {
      if (k > 0 || !content.empty()) out += "\n";
      out += "<tool_call>\n{\"name\": " + nlohmann::json(m.tool_calls[k].name).dump() +
             ", \"arguments\": " + tojson(m.tool_calls[k].arguments) + "}\n</tool_call>";
    }
    out += "<|im_end|>\n";
  }
  if (o.add_generation_prompt) {
    out += "<|im_start|>assistant\n";
    if (!o.enable_thinking) out += "<think>\n\n</think>\n\n";
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
  }
  return "?";
}

std::string end_of_turn(ChatFormat f) {
  switch (f) {
    case ChatFormat::kChatML: return "<|im_end|>";
    case ChatFormat::kLlama3: return "<|eot_id|>";
    default: return "</s>";
  }
}

std::string render_chat(ChatFormat format, const std::vector<RichMessage>& msgs, const ChatRenderOptions& o) {
  switch (format) {
    case ChatFormat::kChatML:
      return render_chatml(msgs, o);
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

ChatFormat detect_chat_format(const nlohmann::json& cfg, const std::string& model_type, int64_t vocab_size) {
  std::string tmpl;
  if (cfg.is_object() && cfg.contains("chat_template")) {
    const auto& t = cfg.at("chat_template");
    if (t.is_string()) {
      tmpl = t.get<std::string>();
    } else if (t.is_array()) {
      for (const auto& e : t)
        if (e.is_object() && e.value("name", "") == "default" && e.contains("template") && e.at("template").is_string())
          tmpl = e.at("template").get<std::string>();
    }
  }
  if (!tmpl.empty()) {
    if (tmpl.find("<|im_start|>") != std::string::npos) return ChatFormat::kChatML;
    if (tmpl.find("<|start_header_id|>") != std::string::npos) return ChatFormat::kLlama3;
    if (tmpl.find("<<SYS>>") != std::string::npos) return ChatFormat::kLlama2;
    if (tmpl.find("[INST]") != std::string::npos) return ChatFormat::kMistral;
  }
  if (model_type.rfind("qwen", 0) == 0) return ChatFormat::kChatML;
  if (model_type == "llama") return vocab_size >= 128000 ? ChatFormat::kLlama3 : ChatFormat::kLlama2;
  if (model_type == "mistral") return ChatFormat::kMistral;
  return ChatFormat::kChatML;
}

}  // namespace spade::policy
