// Chat formats rendered natively (issue 4), checked against the strings the families' published
// chat templates produce for the same conversations (Qwen3 and Qwen2.5 tokenizer_config.json chat_template,
// Meta Llama 3 model card "prompt format", Llama 2 chat template, Mistral-7B-Instruct-v0.1 template).
// (The same templates rendered by @huggingface/jinja from the real files: test_real_tokenizers.cpp.)
#include <gtest/gtest.h>

#include "common/error.h"
#include "policy/chat_formats.h"

using namespace spade::policy;

namespace {
const std::vector<RichMessage> kConv = {
    {"system", "You are helpful.", {}}, {"user", "Hi", {}}, {"assistant", "Hello!", {}}, {"user", "2+2?", {}}};
}

TEST(ChatFormats, ChatMLQwen) {
  EXPECT_EQ(render_chat(ChatFormat::kChatML, kConv),
            "<|im_start|>system\nYou are helpful.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
            "<|im_start|>assistant\nHello!<|im_end|>\n<|im_start|>user\n2+2?<|im_end|>\n<|im_start|>assistant\n");
  ChatRenderOptions o;
  o.enable_thinking = false;
  EXPECT_EQ(render_chat(ChatFormat::kChatML, {{"user", "Hi", {}}}, o),
            "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n");
}

TEST(ChatFormats, QwenThinkingHistoryKeepsOnlyTheAnswer) {
  std::vector<RichMessage> m = {{"user", "a", {}}, {"assistant", "<think>\nreason\n</think>\n\nanswer", {}},
                                {"user", "b", {}}};
  EXPECT_EQ(render_chat(ChatFormat::kChatML, m),
            "<|im_start|>user\na<|im_end|>\n<|im_start|>assistant\nanswer<|im_end|>\n"
            "<|im_start|>user\nb<|im_end|>\n<|im_start|>assistant\n");
}

TEST(ChatFormats, QwenToolsCallsAndResponses) {
  ChatRenderOptions o;
  o.tools = {nlohmann::ordered_json::parse(R"({"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}})")};
  RichMessage call{"assistant", "", {{"get_weather", nlohmann::ordered_json::parse(R"({"city": "Paris"})")}}};
  std::vector<RichMessage> m = {{"system", "Be brief.", {}}, {"user", "Weather?", {}}, call,
                                {"tool", "sunny", {}}, {"tool", "20C", {}}};
  EXPECT_EQ(render_chat(ChatFormat::kChatML, m, o),
            "<|im_start|>system\nBe brief.\n\n# Tools\n\nYou may call one or more functions to assist with the user "
            "query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n<tools>\n"
            "{\"type\": \"function\", \"function\": {\"name\": \"get_weather\", \"parameters\": {\"type\": \"object\"}}}\n"
            "</tools>\n\nFor each function call, return a json object with function name and arguments within "
            "<tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": "
            "<args-json-object>}\n</tool_call><|im_end|>\n"
            "<|im_start|>user\nWeather?<|im_end|>\n"
            "<|im_start|>assistant\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n"
            "</tool_call><|im_end|>\n"
            "<|im_start|>user\n<tool_response>\nsunny\n</tool_response>\n<tool_response>\n20C\n</tool_response><|im_end|>\n"
            "<|im_start|>assistant\n");
}

// Qwen2.5 template (data/tokenizers/qwen2_5/tokenizer_config.json, read by hand): no system message ->
// its default one; assistant history kept verbatim (<think> included); no thinking switch; with tools and
// no system message the tools block follows the default system message + "\n\n".
TEST(ChatFormats, Qwen2DefaultSystemVerbatimHistoryAndTools) {
  const std::string sys = "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.";
  std::vector<RichMessage> m = {{"user", "a", {}}, {"assistant", "<think>\nreason\n</think>\n\nanswer", {}},
                                {"user", "b", {}}};
  ChatRenderOptions o;
  o.enable_thinking = false;  // not part of the Qwen2.5 template: ignored
  EXPECT_EQ(render_chat(ChatFormat::kQwen2, m, o),
            sys + "<|im_end|>\n<|im_start|>user\na<|im_end|>\n<|im_start|>assistant\n<think>\nreason\n</think>\n\n"
                  "answer<|im_end|>\n<|im_start|>user\nb<|im_end|>\n<|im_start|>assistant\n");
  // With a system message it is used instead, and kQwen2 equals kChatML on kConv (no reasoning in it).
  EXPECT_EQ(render_chat(ChatFormat::kQwen2, kConv), render_chat(ChatFormat::kChatML, kConv));
  // Another default system text (Qwen2's, chatml_default_system of its template).
  ChatRenderOptions q2;
  q2.default_system = "You are a helpful assistant.";
  EXPECT_EQ(render_chat(ChatFormat::kQwen2, {{"user", "a", {}}}, q2),
            "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\na<|im_end|>\n"
            "<|im_start|>assistant\n");
  ChatRenderOptions t;
  t.tools = {nlohmann::ordered_json::parse(R"({"name": "f"})")};
  t.add_generation_prompt = false;
  EXPECT_EQ(render_chat(ChatFormat::kQwen2, {{"user", "a", {}}}, t),
            sys + "\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
                  "You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n"
                  "{\"name\": \"f\"}\n</tools>\n\nFor each function call, return a json object with function name and "
                  "arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, "
                  "\"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n<|im_start|>user\na<|im_end|>\n");
  EXPECT_EQ(end_of_turn(ChatFormat::kQwen2), "<|im_end|>");
  EXPECT_STREQ(chat_format_name(ChatFormat::kQwen2), "qwen2");
}

TEST(ChatFormats, Llama3) {
  EXPECT_EQ(render_chat(ChatFormat::kLlama3, kConv),
            "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nYou are helpful.<|eot_id|>"
            "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\nHello!<|eot_id|>"
            "<|start_header_id|>user<|end_header_id|>\n\n2+2?<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\n");
}

TEST(ChatFormats, Llama2AndMistral) {
  EXPECT_EQ(render_chat(ChatFormat::kLlama2, kConv),
            "<s>[INST] <<SYS>>\nYou are helpful.\n<</SYS>>\n\nHi [/INST] Hello! </s><s>[INST] 2+2? [/INST]");
  EXPECT_EQ(render_chat(ChatFormat::kMistral, {{"user", "Hi", {}}, {"assistant", "Hello!", {}}, {"user", "2+2?", {}}}),
            "<s>[INST] Hi [/INST]Hello!</s>[INST] 2+2? [/INST]");
  EXPECT_THROW(render_chat(ChatFormat::kLlama2, {{"user", "a", {}}, {"user", "b", {}}}), spade::Error);
  EXPECT_THROW(render_chat(ChatFormat::kLlama2, {{"user", "a", {}}, {"system", "b", {}}}), spade::Error);
  EXPECT_THROW(render_chat(ChatFormat::kMistral, {{"ipython", "x", {}}}), spade::Error);
  // spade's tool mapping (chat_formats.h): a tool result is a user message in these formats.
  EXPECT_EQ(render_chat(ChatFormat::kMistral, {{"user", "Hi", {}}, {"assistant", "call", {}}, {"tool", "sunny", {}}}),
            "<s>[INST] Hi [/INST]call</s>[INST] sunny [/INST]");
  EXPECT_EQ(render_chat(ChatFormat::kLlama2, {{"tool", " sunny ", {}}}), "<s>[INST] sunny [/INST]");
  EXPECT_EQ(render_chat(ChatFormat::kLlama3, {{"tool", "sunny", {}}}, {false, {}, true}),
            "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nsunny<|eot_id|>");
  ChatRenderOptions o;
  o.tools = {nlohmann::ordered_json::object()};
  EXPECT_THROW(render_chat(ChatFormat::kLlama3, kConv, o), spade::Error);
}

TEST(ChatFormats, DetectFromTokenizerConfig) {
  using nlohmann::json;
  EXPECT_EQ(detect_chat_format(json{{"chat_template", "{% for m in messages %}<|im_start|>..."}}), ChatFormat::kChatML);
  EXPECT_EQ(detect_chat_format(json{{"chat_template", "<|start_header_id|>"}}), ChatFormat::kLlama3);
  EXPECT_EQ(detect_chat_format(json{{"chat_template", "<<SYS>> [INST]"}}), ChatFormat::kLlama2);
  EXPECT_EQ(detect_chat_format(json{{"chat_template", "[INST]"}}), ChatFormat::kMistral);
  EXPECT_EQ(detect_chat_format(json{{"chat_template", json::array({json{{"name", "tool_use"}, {"template", "[INST]"}},
                                                                    json{{"name", "default"}, {"template", "<|im_start|>"}}})}}),
            ChatFormat::kChatML);
  EXPECT_EQ(detect_chat_format(json::object(), "qwen3_moe"), ChatFormat::kChatML);
  EXPECT_EQ(detect_chat_format(json::object(), "qwen3"), ChatFormat::kChatML);
  EXPECT_EQ(detect_chat_format(json::object(), "qwen2"), ChatFormat::kQwen2);
  // Template markers win over model_type: excerpts of the Qwen2.5 and Qwen3 templates (their
  // no-tools system branches, copied from data/tokenizers/*/tokenizer_config.json).
  const std::string qwen25 =
      "{%- if messages[0]['role'] == 'system' %}{{- '<|im_start|>system\\n' + messages[0]['content'] + "
      "'<|im_end|>\\n' }}{%- else %}{{- '<|im_start|>system\\nYou are Qwen, created by Alibaba Cloud. You are a "
      "helpful assistant.<|im_end|>\\n' }}{%- endif %}";
  const std::string qwen3 =
      "{%- if tools %}{{- '<|im_start|>system\\n' }}{%- if messages[0].role == 'system' %}{{- messages[0].content "
      "+ '\\n\\n' }}{%- endif %}{%- else %}{%- if messages[0].role == 'system' %}{{- '<|im_start|>system\\n' + "
      "messages[0].content + '<|im_end|>\\n' }}{%- endif %}{%- endif %}";
  EXPECT_EQ(detect_chat_format(json{{"chat_template", qwen25}}, "qwen3"), ChatFormat::kQwen2);
  EXPECT_EQ(detect_chat_format(json{{"chat_template", qwen3}}, "qwen2"), ChatFormat::kChatML);
  EXPECT_EQ(chatml_default_system(json{{"chat_template", qwen25}}), kQwen25DefaultSystem);
  EXPECT_EQ(chatml_default_system(json{{"chat_template", qwen3}}), "");
  EXPECT_EQ(chatml_default_system(json::object()), "");
  // Jinja escapes decoded (by hand: \' -> ', \n -> newline); a real newline after "system" also opens it.
  EXPECT_EQ(chatml_default_system(json{{"chat_template", "{{ '<|im_start|>system\\nIt\\'s me.\\nHi<|im_end|>' }}"}}),
            "It's me.\nHi");
  EXPECT_EQ(chatml_default_system(json{{"chat_template", "<|im_start|>system\nBe nice.<|im_end|>"}}), "Be nice.");
  EXPECT_EQ(detect_chat_format(json::object(), "llama", 128256), ChatFormat::kLlama3);
  EXPECT_EQ(detect_chat_format(json::object(), "llama", 32000), ChatFormat::kLlama2);
  EXPECT_EQ(end_of_turn(ChatFormat::kLlama3), "<|eot_id|>");
}
