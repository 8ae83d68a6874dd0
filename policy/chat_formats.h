// Chat formats of the supported model families, rendered natively as text (issue 4): the string
// each family's Jinja chat_template (tokenizer_config.json) produces, so a tokenizer that maps the
// special-token strings to their ids (Tokenizer::encode(text, parse_special = true)) yields the
// prompt ids. Formats (sources: the families' published chat templates / model cards):
//
//   kChatML (Qwen3's tokenizer_config.json chat_template; spade's tiny default):
//     <|im_start|>{role}\n{content}<|im_end|>\n ... [<|im_start|>assistant\n]
//     tools: appended to the system turn (if any, + "\n\n") as "# Tools" with one JSON schema per line
//     inside <tools></tools>; assistant tool calls as <tool_call>\n{"name": .., "arguments": ..}\n</tool_call>;
//     consecutive tool results grouped into one user turn as <tool_response>\n..\n</tool_response>.
//     thinking: assistant turns before the last user message keep only the text after </think>;
//     enable_thinking = false appends "<think>\n\n</think>\n\n" to the generation prompt.
//   kQwen2 (Qwen2.5's tokenizer_config.json chat_template, config.json model_type "qwen2"; also any
//   ChatML template that writes a literal default system turn, e.g. Qwen2's "You are a helpful
//   assistant."): ChatML as above except that
//     - a conversation whose first message is not "system" starts with the default system turn
//       <|im_start|>system\n{default_system}<|im_end|>\n (Qwen2.5: kQwen25DefaultSystem);
//     - assistant contents are kept verbatim (no </think> stripping) and there is no thinking switch;
//     - tools: the system turn is {system content, or the default system message} + "\n\n# Tools..."
//       (the same tool wording, tool-call and tool-response text as Qwen3 otherwise).
//   kLlama3 (Llama 3 / 3.1 without the 3.1 date header):
//     <|begin_of_text|><|start_header_id|>{role}<|end_header_id|>\n\n{content, trimmed}<|eot_id|> ...
//     [<|start_header_id|>assistant<|end_header_id|>\n\n]
//   kLlama2 (Llama 2 chat; user and assistant contents trimmed, as the template's .strip()):
//     <s>[INST] <<SYS>>\n{system}\n<</SYS>>\n\n{user} [/INST] {assistant} </s><s>[INST] {user} [/INST]
//   kMistral (Mistral 7B Instruct v0.1/v0.2; system text + "\n\n" is prepended to the first user message):
//     <s>[INST] {user} [/INST]{assistant}</s>[INST] {user} [/INST]
//   A "tool" message (a tool's result) is rendered as a user message in Llama 3, Llama 2 and Mistral
//   (spade's documented mapping: none of these templates has a tool role; see chat_template.h), and as
//   Qwen's <tool_response> user turn in ChatML and Qwen2.
// Pure functions of their inputs; thread-safe.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

namespace spade::policy {

enum class ChatFormat { kChatML, kLlama3, kLlama2, kMistral, kQwen2 };

/// True for the formats built from <|im_start|> / <|im_end|> turns (kChatML, kQwen2).
inline bool is_chatml_family(ChatFormat f) { return f == ChatFormat::kChatML || f == ChatFormat::kQwen2; }

/// Qwen2.5's default system message (its tokenizer_config.json chat_template, both branches: with and
/// without tools), used by kQwen2 when the conversation has no leading system message.
inline constexpr const char* kQwen25DefaultSystem = "You are Qwen, created by Alibaba Cloud. You are a helpful assistant.";

/// A plain chat message (what ChatTemplate renders token-in/token-out).
struct ChatMessage {
  std::string role;     // "system" | "user" | "assistant" | "tool" ...
  std::string content;
};

/// "chatml" | "llama3" | "llama2" | "mistral" | "qwen2".
const char* chat_format_name(ChatFormat format);

/// A tool call made by an assistant message (ChatML/Qwen only).
struct ToolCall {
  std::string name;
  nlohmann::ordered_json arguments;  // object (ordered: rendered in insertion order, as Jinja tojson)
};

/// A message with the optional fields the richer formats use.
struct RichMessage {
  std::string role;     // "system" | "user" | "assistant" | "tool"
  std::string content;
  std::vector<ToolCall> tool_calls;  // assistant only
};

struct ChatRenderOptions {
  bool add_generation_prompt = true;
  /// Tool JSON schemas ({"type": "function", "function": {...}} or bare function objects); kChatML and
  /// kQwen2 only.
  std::vector<nlohmann::ordered_json> tools;  // ordered: keys rendered in their given order
  /// Qwen3 thinking switch; false appends an empty think block to the generation prompt. kChatML only
  /// (the Qwen2.5 template has no such switch).
  bool enable_thinking = true;
  /// kQwen2 only: the system message inserted when messages[0] is not "system" (for a checkpoint:
  /// chatml_default_system(tokenizer_config), as ChatTemplate::for_checkpoint passes it).
  std::string default_system = kQwen25DefaultSystem;
};

/// Renders `messages` in `format`. Throws spade::Error for a role the format cannot express
/// (Llama 2 / Mistral: anything but system/user/assistant/tool), tools or tool calls in a format
/// without tool support, or Llama 2/Mistral messages that do not alternate user/assistant after an
/// optional leading system message (the templates' own rule; "tool" counts as user).
std::string render_chat(ChatFormat format, const std::vector<RichMessage>& messages, const ChatRenderOptions& options = {});

/// Picks the format from a tokenizer_config.json object: its "chat_template" (a string, or a list of
/// {name, template} whose "default" entry is used) is recognised by its markers: <|im_start|> ->
/// kQwen2 when chatml_default_system() finds a literal default system turn in it (Qwen2.5, Qwen2), else
/// kChatML (Qwen3); <|start_header_id|> -> Llama 3; <<SYS>> -> Llama 2; [INST] -> Mistral. Without a
/// template, `model_type` decides (config.json): "qwen2" (Qwen2 and Qwen2.5 checkpoints) -> kQwen2,
/// other qwen* -> kChatML, llama -> Llama 3 if vocab_size >= 128000 else Llama 2, mistral -> Mistral;
/// otherwise kChatML.
ChatFormat detect_chat_format(const nlohmann::json& tokenizer_config, const std::string& model_type = "",
                              int64_t vocab_size = 0);

/// The default system message a ChatML chat_template (tokenizer_config.json, as detect_chat_format reads
/// it) writes when the conversation has none: the text of the first Jinja string literal of the form
/// '<|im_start|>system\n{text}<|im_end|>' whose {text} is non-empty and holds no quote, brace or
/// expression (Jinja escapes \n \t \r \\ \' \" decoded). Qwen2.5 -> kQwen25DefaultSystem; Qwen3 (whose
/// system turn is always `messages[0].content`) -> "". "" when there is no template or no such literal.
std::string chatml_default_system(const nlohmann::json& tokenizer_config);

/// The end-of-turn string of a format (the sampler's stop): <|im_end|> (ChatML, Qwen2), <|eot_id|>
/// (Llama 3), </s> (Llama 2, Mistral).
std::string end_of_turn(ChatFormat format);

// Rules of the published templates shared by render_chat and ChatTemplate (chat_template.h).

/// Jinja `trim` / Python str.strip() as the Llama templates apply it: spaces, tabs, CR and LF removed
/// at both ends.
std::string template_trim(const std::string& s);

/// Qwen2.5/Qwen3 templates (kQwen2 / kChatML): the system turn's content when `tools` are given:
/// *system + "\n\n" (when given: the system message's content, or kQwen2's default system message;
/// Qwen3 writes none without a system message) + the "# Tools" block (one tojson line per tool inside
/// <tools></tools>, then the <tool_call> instructions), as render_chat writes it.
std::string qwen_tools_system(const std::optional<std::string>& system, const std::vector<nlohmann::ordered_json>& tools);

/// The opening of an agent conversation whose tools are `tools` (OpenAI `tools` entries), as the format's
/// published chat template renders a system message, a first user message and `tools`:
///   kChatML / kQwen2: {system: qwen_tools_system(system, tools)}, {user: user};
///   kLlama3: Llama 3.1 Instruct's template (tools_in_user_message, its default; date_string its
///     default "26 Jul 2024"): {system: "Environment: ipython\nCutting Knowledge Date: December
///     2023\nToday Date: 26 Jul 2024\n\n" + trim(system)}, {user: "Given the following functions,
///     please respond with a JSON for a function call with its proper arguments that best answers the
///     given prompt.\n\nRespond in the format {"name": function name, "parameters": dictionary of
///     argument name and its value}.Do not use variables.\n\n" + per tool its JSON with indent 4 +
///     "\n\n", then trim(user)}.
/// Throws spade::Error naming the format for kLlama2 / kMistral (their templates have no tools).
std::vector<ChatMessage> tool_use_opening(ChatFormat format, const std::string& system, const std::string& user,
                                          const std::vector<nlohmann::ordered_json>& tools);

/// The role a tool's result takes in `format`'s conversation: "ipython" for kLlama3 (Llama 3.1's tool
/// results: <|start_header_id|>ipython<|end_header_id|>), "tool" otherwise (Qwen's <tool_response>).
std::string tool_result_role(ChatFormat format);

/// Qwen2.5/Qwen3 templates: an assistant message's text with its tool calls, as render_chat writes it:
/// `content`, then per call ("\n" before it unless it opens an empty content)
/// "<tool_call>\n{"name": .., "arguments": ..}\n</tool_call>" (arguments as Jinja's tojson).
std::string qwen_assistant_content(const std::string& content, const std::vector<ToolCall>& calls);

/// Qwen2.5/Qwen3 templates (kQwen2 / kChatML): one tool result as it appears inside the user turn that carries it,
/// "<tool_response>\n" + result + "\n</tool_response>".
std::string qwen_tool_response(const std::string& result);

/// Qwen3 template: an assistant message before the last user message keeps only the text after its
/// last "</think>", without leading newlines; `content` unchanged when it has no "</think>".
std::string qwen3_history_content(const std::string& content);

/// Llama 2 / Mistral templates (their raise_exception rule): roles[start..] must alternate user,
/// assistant, user, ... ("tool" counts as user). Throws spade::Error starting with `context` and
/// naming the first offending message otherwise.
void require_alternation(const std::vector<std::string>& roles, size_t start, const std::string& context);

}  // namespace spade::policy
