#include "policy/chat_template.h"

#include <algorithm>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "common/atomic_file.h"
#include "common/error.h"
#include "policy/tokenizer_json.h"

namespace spade::policy {

namespace {

void add(std::vector<int64_t>& out, const std::vector<int64_t>& ids) { out.insert(out.end(), ids.begin(), ids.end()); }

int64_t special_id(const Tokenizer& tok, ChatFormat format, const char* token) {
  try {
    return tok.token_id(token);
  } catch (const spade::Error& e) {
    throw spade::Error(std::string("ChatTemplate: the ") + chat_format_name(format) + " chat format needs the special token " +
                       token + ", which the tokenizer " + tok.model_path() + " lacks (" + e.what() + ")");
  }
}

nlohmann::json read_json_if_present(const std::filesystem::path& path) {
  if (!std::filesystem::exists(path)) return nlohmann::json::object();
  const std::string text = spade::read_file(path.string(), tokenizer_json::kMaxFileBytes);
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw spade::Error("ChatTemplate: " + path.string() + " is not valid JSON: " + e.what());
  }
}

}  // namespace

ChatTemplate::ChatTemplate(const Tokenizer& tokenizer) : ChatTemplate(tokenizer, ChatFormat::kChatML) {}

ChatTemplate::ChatTemplate(const Tokenizer& tokenizer, ChatFormat format) : tok_(&tokenizer), format_(format) {
  switch (format) {
    case ChatFormat::kQwen2:
      default_system_ = kQwen25DefaultSystem;
      [[fallthrough]];
    case ChatFormat::kChatML:
      start_ = special_id(tokenizer, format, "<|im_start|>");
      end_ = special_id(tokenizer, format, "<|im_end|>");
      break;
    case ChatFormat::kLlama3:
      bos_ = special_id(tokenizer, format, "<|begin_of_text|>");
      start_ = special_id(tokenizer, format, "<|start_header_id|>");
      mid_ = special_id(tokenizer, format, "<|end_header_id|>");
      end_ = special_id(tokenizer, format, "<|eot_id|>");
      break;
    case ChatFormat::kLlama2:
    case ChatFormat::kMistral:
      bos_ = special_id(tokenizer, format, "<s>");
      end_ = special_id(tokenizer, format, "</s>");
      break;
  }
}

ChatFormat ChatTemplate::detect_format(const std::string& dir, const Tokenizer& tokenizer) {
  return detect(dir, tokenizer, read_json_if_present(std::filesystem::path(dir) / "tokenizer_config.json"));
}

ChatFormat ChatTemplate::detect(const std::string& dir, const Tokenizer& tokenizer, const nlohmann::json& tokenizer_config) {
  const std::filesystem::path d(dir);
  const nlohmann::json config = read_json_if_present(d / "config.json");
  std::string model_type;
  int64_t vocab_size = tokenizer.vocab_size();
  if (config.is_object()) {
    if (config.contains("model_type") && config.at("model_type").is_string())
      model_type = config.at("model_type").get<std::string>();
    if (config.contains("vocab_size") && config.at("vocab_size").is_number_integer())
      vocab_size = config.at("vocab_size").get<int64_t>();
  }
  return detect_chat_format(tokenizer_config, model_type, vocab_size);
}

ChatTemplate ChatTemplate::for_checkpoint(const std::string& dir, const Tokenizer& tokenizer) {
  const nlohmann::json tokenizer_config = read_json_if_present(std::filesystem::path(dir) / "tokenizer_config.json");
  const ChatFormat format = detect(dir, tokenizer, tokenizer_config);
  try {
    ChatTemplate chat(tokenizer, format);
    if (format == ChatFormat::kQwen2) {
      // The template's own default system text (Qwen2: "You are a helpful assistant."); Qwen2.5's when
      // the template has none (detected from model_type "qwen2" alone).
      const std::string from_template = chatml_default_system(tokenizer_config);
      if (!from_template.empty()) chat.default_system_ = from_template;
    }
    return chat;
  } catch (const spade::Error& e) {
    throw spade::Error(std::string(e.what()) + "; the format was detected from the files of " + dir +
                       " (tokenizer_config.json chat_template, else config.json model_type)");
  }
}

void ChatTemplate::add_text(std::vector<int64_t>& out, const std::string& text) const { add(out, tok_->encode(text)); }

// One complete message (formats in the header). Llama 2 / Mistral user messages get their content
// already folded with the system text by render().
void ChatTemplate::append_message(std::vector<int64_t>& out, const std::string& role, const std::string& content) const {
  switch (format_) {
    case ChatFormat::kChatML:
    case ChatFormat::kQwen2:
      out.push_back(start_);
      if (role == "tool") {
        add_text(out, "user");
        add_text(out, "\n");
        add_text(out, qwen_tool_response(content));
      } else {
        add_text(out, role);
        add_text(out, "\n");
        add_text(out, content);
      }
      out.push_back(end_);
      add_text(out, "\n");
      return;
    case ChatFormat::kLlama3:
      out.push_back(start_);
      add_text(out, role == "tool" ? "user" : role);
      out.push_back(mid_);
      add_text(out, "\n\n");
      add_text(out, template_trim(content));
      out.push_back(end_);
      return;
    case ChatFormat::kLlama2:
      if (role == "assistant") {
        add_text(out, " " + template_trim(content) + " ");
        out.push_back(end_);
      } else {
        out.push_back(bos_);
        add_text(out, "[INST] " + template_trim(content) + " [/INST]");
      }
      return;
    case ChatFormat::kMistral:
      if (role == "assistant") {
        add_text(out, content);
        out.push_back(end_);
      } else {
        add_text(out, "[INST] " + content + " [/INST]");
      }
      return;
  }
}

std::vector<int64_t> ChatTemplate::render(const std::vector<ChatMessage>& messages, bool add_generation_prompt) const {
  std::vector<int64_t> out;
  switch (format_) {
    case ChatFormat::kChatML:
    case ChatFormat::kQwen2: {
      const bool qwen2 = format_ == ChatFormat::kQwen2;
      // Qwen2.5: a conversation without a leading system message starts with the default one.
      if (qwen2 && (messages.empty() || messages[0].role != "system")) append_message(out, "system", default_system_);
      size_t last_query = 0;  // Qwen3: assistant turns before the last user message drop their reasoning
      if (!qwen2)             // (Qwen2.5 keeps them verbatim)
        for (size_t i = 0; i < messages.size(); ++i)
          if (messages[i].role == "user") last_query = i;
      for (size_t i = 0; i < messages.size(); ++i) {
        const ChatMessage& m = messages[i];
        if (m.role == "tool") {
          // Qwen groups consecutive tool results into one user turn, whose text is one piece as in the
          // template's string (Qwen2.5 has no <tool_response> token: "</tool_response>\n<tool_response>"
          // encodes across the joint).
          std::string results = qwen_tool_response(m.content);
          while (i + 1 < messages.size() && messages[i + 1].role == "tool")
            results += "\n" + qwen_tool_response(messages[++i].content);
          append_message(out, "user", results);  // == append_message(out, "tool", m.content) for one result
          continue;
        }
        append_message(out, m.role,
                       m.role == "assistant" && i < last_query ? qwen3_history_content(m.content) : m.content);
      }
      break;
    }
    case ChatFormat::kLlama3:
      out.push_back(bos_);
      for (const ChatMessage& m : messages) append_message(out, m.role, m.content);
      break;
    case ChatFormat::kLlama2:
    case ChatFormat::kMistral: {
      const bool sys = !messages.empty() && messages[0].role == "system";
      const size_t start = sys ? 1 : 0;
      {
        std::vector<std::string> roles;
        for (const ChatMessage& m : messages) roles.push_back(m.role);
        require_alternation(roles, start, std::string("ChatTemplate::render: ") + chat_format_name(format_));
      }
      if (format_ == ChatFormat::kMistral) out.push_back(bos_);
      for (size_t i = start; i < messages.size(); ++i) {
        std::string content = messages[i].content;
        if (sys && i == start)
          content = format_ == ChatFormat::kLlama2 ? "<<SYS>>\n" + messages[0].content + "\n<</SYS>>\n\n" + content
                                                   : messages[0].content + "\n\n" + content;
        append_message(out, messages[i].role, content);
      }
      break;
    }
  }
  if (add_generation_prompt) add(out, generation_prompt_ids());
  return out;
}

std::string ChatTemplate::render_text(const std::vector<ChatMessage>& messages, bool add_generation_prompt) const {
  std::vector<RichMessage> rich;
  for (const ChatMessage& m : messages) rich.push_back({m.role, m.content, {}});
  ChatRenderOptions options;
  options.add_generation_prompt = add_generation_prompt;
  options.default_system = default_system_;
  return render_chat(format_, rich, options);
}

std::vector<int64_t> ChatTemplate::ids_for_turn(const std::string& role, const std::string& text) const {
  std::vector<int64_t> out;
  switch (format_) {
    case ChatFormat::kChatML:
    case ChatFormat::kQwen2:
      add_text(out, "\n");  // closes the assistant turn that ended with <|im_end|>
      append_message(out, role, text);
      break;
    case ChatFormat::kLlama3:
      append_message(out, role, text);
      break;
    case ChatFormat::kLlama2:
    case ChatFormat::kMistral:
      if (role != "user" && role != "tool")
        throw spade::Error(std::string("ChatTemplate::ids_for_turn: the ") + chat_format_name(format_) +
                           " format alternates user/assistant turns: after an assistant turn only a 'user' or "
                           "'tool' turn can follow, not '" + role + "'");
      append_message(out, "user", text);
      break;
  }
  add(out, generation_prompt_ids());
  return out;
}

std::vector<int64_t> ChatTemplate::ids_for_tool_results(const std::vector<std::string>& results) const {
  if (results.empty()) throw spade::Error("ChatTemplate::ids_for_tool_results: no results");
  std::vector<int64_t> out;
  switch (format_) {
    case ChatFormat::kChatML:
    case ChatFormat::kQwen2: {
      std::string grouped = qwen_tool_response(results[0]);
      for (size_t i = 1; i < results.size(); ++i) grouped += "\n" + qwen_tool_response(results[i]);
      add_text(out, "\n");  // closes the assistant turn that ended with <|im_end|>
      out.push_back(start_);
      add_text(out, "user");
      add_text(out, "\n");
      add_text(out, grouped);  // one piece, as render() encodes a group (header comment)
      out.push_back(end_);
      add_text(out, "\n");
      break;
    }
    case ChatFormat::kLlama3:
      for (const std::string& r : results) append_message(out, tool_result_role(format_), r);
      break;
    case ChatFormat::kLlama2:
    case ChatFormat::kMistral:
      throw spade::Error(std::string("ChatTemplate::ids_for_tool_results: the ") + chat_format_name(format_) +
                         " chat format has no tool results (its template renders no tools)");
  }
  add(out, generation_prompt_ids());
  return out;
}

std::vector<int64_t> ChatTemplate::generation_prompt_ids() const {
  std::vector<int64_t> out;
  switch (format_) {
    case ChatFormat::kChatML:
    case ChatFormat::kQwen2:
      out.push_back(start_);
      add_text(out, "assistant");
      add_text(out, "\n");
      break;
    case ChatFormat::kLlama3:
      out.push_back(start_);
      add_text(out, "assistant");
      out.push_back(mid_);
      add_text(out, "\n\n");
      break;
    case ChatFormat::kLlama2:
    case ChatFormat::kMistral:
      break;  // "[/INST]" ends the user turn and opens the answer
  }
  return out;
}

}  // namespace spade::policy
