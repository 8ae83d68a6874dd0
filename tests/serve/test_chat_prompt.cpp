// serve/chat_prompt.h: a chat request's prompt ids in the checkpoint's chat template. On a tiny byte-level
// BPE tokenizer (tests/testing/tiny_bpe.h: decode(enc(x) + enc(y)) == x + y) the ids decode to the text
// Qwen3's published chat template writes, copied here by hand for a tools conversation; without tools the
// ids are exactly ChatTemplate::render's (what `spade generate --chat` samples from). Formats without
// tools refuse them with a 400 naming "tools".
#include <gtest/gtest.h>

#include "policy/chat_template.h"
#include "serve/api_request.h"
#include "serve/chat_prompt.h"
#include "tests/testing/test_util.h"
#include "tests/testing/tiny_bpe.h"

using namespace spade;
using namespace spade::serve;
using json = nlohmann::ordered_json;

namespace {
policy::Tokenizer tokenizer(const std::string& name, const std::vector<std::string>& specials) {
  return policy::Tokenizer::load(fixtures::write_tiny_bpe(fixtures::fresh_test_dir("serve_chat_prompt", name), specials));
}

int status_of(const std::function<void()>& f, std::string* param) {
  try {
    f();
  } catch (const ApiError& e) {
    *param = e.param;
    return e.status;
  }
  return 0;
}
}  // namespace

TEST(ChatPrompt, WithoutToolsItIsTheTemplatesRender) {
  const policy::Tokenizer tok = tokenizer("chatml", fixtures::kChatMLSpecials);
  const policy::ChatTemplate chat(tok);
  EXPECT_EQ(chat_prompt_ids(chat, {{"system", "S", {}}, {"user", "hi", {}}}, {}),
            chat.render({{"system", "S"}, {"user", "hi"}}, true));
  EXPECT_EQ(tok.decode(chat_prompt_ids(chat, {{"user", "hi", {}}}, {})),
            "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n");
}

// Qwen3's template (tokenizer_config.json of Qwen/Qwen3-8B), rendered by hand for: a system message and a
// user message with one tool; then a tool call and its result without a system message.
TEST(ChatPrompt, ToolsAndToolCallsAreWrittenAsQwen3Writes) {
  const policy::Tokenizer tok = tokenizer("chatml_tools", fixtures::kChatMLSpecials);
  const policy::ChatTemplate chat(tok);
  const std::vector<json> tools = {
      json::parse(R"({"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}})")};
  const std::string tools_block =
      "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
      "You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n"
      "{\"type\": \"function\", \"function\": {\"name\": \"f\", \"parameters\": {\"type\": \"object\"}}}\n</tools>\n\n"
      "For each function call, return a json object with function name and arguments within <tool_call></tool_call> "
      "XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call>";
  EXPECT_EQ(tok.decode(chat_prompt_ids(chat, {{"system", "S", {}}, {"user", "hi", {}}}, tools)),
            "<|im_start|>system\nS\n\n" + tools_block + "<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n");

  policy::ToolCall call{"f", json::parse(R"({"x": 1})")};
  EXPECT_EQ(tok.decode(chat_prompt_ids(chat, {{"user", "w?", {}}, {"assistant", "", {call}}, {"tool", "42", {}}}, tools)),
            "<|im_start|>system\n" + tools_block +
                "<|im_end|>\n<|im_start|>user\nw?<|im_end|>\n<|im_start|>assistant\n<tool_call>\n"
                "{\"name\": \"f\", \"arguments\": {\"x\": 1}}\n</tool_call><|im_end|>\n<|im_start|>user\n"
                "<tool_response>\n42\n</tool_response><|im_end|>\n<|im_start|>assistant\n");
}

TEST(ChatPrompt, FormatsWithoutToolsRefuseThem) {
  const policy::Tokenizer tok = tokenizer("llama2", fixtures::kLlama2Specials);
  const policy::ChatTemplate chat(tok, policy::ChatFormat::kLlama2);
  std::string param;
  const std::vector<json> tools = {json::parse(R"({"type": "function", "function": {"name": "f"}})")};
  EXPECT_EQ(status_of([&] { chat_prompt_ids(chat, {{"user", "hi", {}}}, tools); }, &param), 400);
  EXPECT_EQ(param, "tools");
  policy::ToolCall call{"f", json::object()};
  EXPECT_EQ(status_of([&] { chat_prompt_ids(chat, {{"user", "hi", {}}, {"assistant", "", {call}}}, {}); }, &param), 400);
  EXPECT_EQ(param, "messages");
  // Llama 2's own rule: roles alternate user / assistant.
  EXPECT_EQ(status_of([&] { chat_prompt_ids(chat, {{"user", "a", {}}, {"user", "b", {}}}, {}); }, &param), 400);
  EXPECT_EQ(param, "messages");
}
