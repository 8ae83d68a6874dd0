// serve/api_request.h: request bodies of /v1/chat/completions and /v1/completions, hand-written, parsed
// into the values OpenAI's API reference gives them (defaults: temperature 1, top_p 1, n 1; completions
// max_tokens 16), and every malformed or unsupported body refused with a 400 naming the field.
#include <gtest/gtest.h>

#include <string>

#include "serve/api_request.h"

using namespace spade::serve;

namespace {

/// The ApiError `parse` throws for `body` (status 0 when none).
template <class Parse>
ApiError error_of(Parse parse, const std::string& body) {
  try {
    parse(body);
  } catch (const ApiError& e) {
    return e;
  }
  return ApiError(0, "no error");
}
ApiError chat_error(const std::string& body) { return error_of(parse_chat_request, body); }
ApiError completion_error(const std::string& body) { return error_of(parse_completion_request, body); }

/// A chat body with `extra` fields added after model and messages.
std::string chat_body(const std::string& extra) {
  return R"({"model": "m", "messages": [{"role": "user", "content": "hi"}])" + (extra.empty() ? "" : ", " + extra) + "}";
}

}  // namespace

TEST(ApiRequest, ChatDefaultsAreOpenAIs) {
  const ChatRequest r = parse_chat_request(chat_body(""));
  EXPECT_EQ(r.model, "m");
  ASSERT_EQ(r.messages.size(), 1u);
  EXPECT_EQ(r.messages[0].role, "user");
  EXPECT_EQ(r.messages[0].content, "hi");
  EXPECT_EQ(r.sampling.temperature, 1.0);
  EXPECT_EQ(r.sampling.top_p, 1.0);
  EXPECT_EQ(r.sampling.top_k, 0);
  EXPECT_EQ(r.sampling.n, 1);
  EXPECT_FALSE(r.sampling.max_tokens.has_value());
  EXPECT_FALSE(r.sampling.seed.has_value());
  EXPECT_EQ(r.sampling.logprobs, -1);
  EXPECT_FALSE(r.sampling.stream);
  EXPECT_FALSE(r.sampling.ignore_eos);
  EXPECT_FALSE(r.tool_calls_enabled);
}

TEST(ApiRequest, ChatFieldsAreRead) {
  const ChatRequest r = parse_chat_request(R"({
    "model": "m", "temperature": 0.5, "top_p": 0.9, "top_k": 7, "min_p": 0.05, "max_tokens": 99,
    "max_completion_tokens": 12, "stop": ["END", "\n\n"], "seed": -1, "n": 3, "logprobs": true, "top_logprobs": 5,
    "stream": true, "stream_options": {"include_usage": true}, "user": "ignored", "ignore_eos": true,
    "messages": [
      {"role": "developer", "content": "be brief"},
      {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
      {"role": "assistant", "content": null,
       "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{\"x\": 1, \"a\": [2]}"}}]},
      {"role": "tool", "tool_call_id": "call_1", "content": "42"}],
    "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}],
    "parallel_tool_calls": false})");
  EXPECT_EQ(r.sampling.temperature, 0.5);
  EXPECT_EQ(r.sampling.top_p, 0.9);
  EXPECT_EQ(r.sampling.top_k, 7);
  EXPECT_EQ(r.sampling.min_p, 0.05);
  EXPECT_EQ(r.sampling.max_tokens, 12);  // max_completion_tokens wins over the deprecated max_tokens
  EXPECT_EQ(r.sampling.stop, (std::vector<std::string>{"END", "\n\n"}));
  EXPECT_EQ(r.sampling.seed, ~0ull);  // -1 wraps to 2^64 - 1
  EXPECT_EQ(r.sampling.n, 3);
  EXPECT_EQ(r.sampling.logprobs, 5);
  EXPECT_TRUE(r.sampling.stream);
  EXPECT_TRUE(r.sampling.include_usage);
  EXPECT_TRUE(r.sampling.ignore_eos);
  ASSERT_EQ(r.messages.size(), 4u);
  EXPECT_EQ(r.messages[0].role, "system");  // developer is OpenAI's newer name for it
  EXPECT_EQ(r.messages[1].content, "a\nb");  // text parts joined by "\n" (vLLM)
  EXPECT_EQ(r.messages[2].content, "");
  ASSERT_EQ(r.messages[2].tool_calls.size(), 1u);
  EXPECT_EQ(r.messages[2].tool_calls[0].name, "f");
  EXPECT_EQ(r.messages[2].tool_calls[0].arguments.dump(), R"({"x":1,"a":[2]})");  // key order kept
  EXPECT_EQ(r.messages[3].role, "tool");
  EXPECT_EQ(r.messages[3].content, "42");
  ASSERT_EQ(r.tools.size(), 1u);
  EXPECT_EQ(r.tools[0].dump(), R"({"type":"function","function":{"name":"f","parameters":{"type":"object"}}})");
  EXPECT_TRUE(r.tool_calls_enabled);
  EXPECT_FALSE(r.parallel_tool_calls);
}

TEST(ApiRequest, TinyTemperatureIsGreedyAndToolChoiceNoneDisablesCalls) {
  EXPECT_EQ(parse_chat_request(chat_body(R"("temperature": 0.000001)")).sampling.temperature, 0.0);
  const ChatRequest r =
      parse_chat_request(chat_body(R"("tools": [{"type": "function", "function": {"name": "f"}}], "tool_choice": "none")"));
  EXPECT_EQ(r.tools.size(), 1u);
  EXPECT_FALSE(r.tool_calls_enabled);
}

// Each malformed body: status 400 and the offending field as param (OpenAI's error "param").
TEST(ApiRequest, MalformedChatBodiesNameTheField) {
  struct Case {
    std::string body, param, says;
  };
  const std::vector<Case> cases = {
      {R"({"model": "m", "messages": [)", "", "not valid JSON"},
      {R"([1, 2])", "", "must be a JSON object"},
      {R"({"messages": [{"role": "user", "content": "hi"}]})", "model", "'model' is required"},
      {R"({"model": "m", "messages": []})", "messages", "non-empty list"},
      {R"({"model": "m", "messages": [{"role": "wizard", "content": "hi"}]})", "messages[0].role", "not 'wizard'"},
      {R"({"model": "m", "messages": [{"role": "user"}]})", "messages[0].content", "is required"},
      {R"({"model": "m", "messages": [{"role": "user", "content": [{"type": "image_url"}]}]})", "messages[0].content[0]",
       "'image_url' is not supported"},
      {R"({"model": "m", "messages": [{"role": "assistant", "content": null, "tool_calls": [{"type": "function", "function": {"name": "f", "arguments": "{bad"}}]}]})",
       "messages[0].tool_calls[0].function.arguments", "not valid JSON"},
      {chat_body(R"("temperature": 2.5)"), "temperature", "must be in [0.0, 2.0]"},
      {chat_body(R"("temperature": "hot")"), "temperature", "must be a number"},
      {chat_body(R"("top_p": 0)"), "top_p", "(0, 1]"},
      {chat_body(R"("n": 0)"), "n", "must be in [1, 128]"},
      {chat_body(R"("max_tokens": 0)"), "max_tokens", "must be in [1, "},
      {chat_body(R"("max_tokens": 1.5)"), "max_tokens", "must be an integer"},
      {chat_body(R"("stop": ["a", "b", "c", "d", "e"])"), "stop", "at most 4"},
      {chat_body(R"("stop": "")"), "stop", "must not be empty"},
      {chat_body(R"("seed": "x")"), "seed", "must be an integer"},
      {chat_body(R"("top_logprobs": 2)"), "top_logprobs", "needs 'logprobs': true"},
      {chat_body(R"("logprobs": true, "top_logprobs": 21)"), "top_logprobs", "[0, 20]"},
      {chat_body(R"("stream_options": {"include_usage": true})"), "stream_options", "only allowed with 'stream': true"},
      {chat_body(R"("tools": [{"type": "function", "function": {}}])"), "tools[0].function.name", "must be a string"},
      {chat_body(R"("tools": [{"type": "retrieval"}])"), "tools[0]", "must be {\"type\": \"function\""},
      {chat_body(R"("tools": [{"type": "function", "function": {"name": "f"}}], "tool_choice": "required")"), "tool_choice",
       "no forced tool calls"},
      {chat_body(R"("frequency_penalty": 0.5)"), "frequency_penalty", "not supported"},
      {chat_body(R"("logit_bias": {"5": 10})"), "logit_bias", "not supported"},
      {chat_body(R"("response_format": {"type": "json_object"})"), "response_format", "not supported"},
  };
  for (const Case& c : cases) {
    const ApiError e = chat_error(c.body);
    EXPECT_EQ(e.status, 400) << c.body;
    EXPECT_EQ(e.type, "invalid_request_error") << c.body;
    EXPECT_EQ(e.param, c.param) << c.body;
    EXPECT_NE(std::string(e.what()).find(c.says), std::string::npos) << c.body << " -> " << e.what();
  }
  // No-op values of unsupported features are accepted.
  EXPECT_NO_THROW(parse_chat_request(chat_body(R"("frequency_penalty": 0, "presence_penalty": 0, "logit_bias": {}, "response_format": {"type": "text"})")));
}

TEST(ApiRequest, CompletionPromptsAndDefaults) {
  CompletionRequest r = parse_completion_request(R"({"model": "m", "prompt": "Once"})");
  ASSERT_EQ(r.prompts.size(), 1u);
  EXPECT_FALSE(r.prompts[0].is_ids);
  EXPECT_EQ(r.prompts[0].text, "Once");
  EXPECT_EQ(r.sampling.max_tokens, 16);  // OpenAI's completions default
  EXPECT_EQ(r.sampling.logprobs, -1);

  r = parse_completion_request(R"({"model": "m", "prompt": [1, 2, 3], "logprobs": 0, "max_tokens": 5})");
  ASSERT_EQ(r.prompts.size(), 1u);
  EXPECT_TRUE(r.prompts[0].is_ids);
  EXPECT_EQ(r.prompts[0].ids, (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(r.sampling.logprobs, 0);
  EXPECT_EQ(r.sampling.max_tokens, 5);

  r = parse_completion_request(R"({"model": "m", "prompt": ["a", [4, 5]], "logprobs": 3, "echo": false, "best_of": 1})");
  ASSERT_EQ(r.prompts.size(), 2u);
  EXPECT_EQ(r.prompts[0].text, "a");
  EXPECT_EQ(r.prompts[1].ids, (std::vector<int64_t>{4, 5}));
  EXPECT_EQ(r.sampling.logprobs, 3);
}

TEST(ApiRequest, MalformedCompletionBodiesNameTheField) {
  struct Case {
    std::string body, param, says;
  };
  const std::vector<Case> cases = {
      {R"({"model": "m"})", "prompt", "'prompt' is required"},
      {R"({"model": "m", "prompt": 5})", "prompt", "must be a string"},
      {R"({"model": "m", "prompt": []})", "prompt", "must be a string"},
      {R"({"model": "m", "prompt": [1, -2]})", "prompt", "integers >= 0"},
      {R"({"model": "m", "prompt": ["a", []]})", "prompt", "'prompt[1]'"},
      {R"({"model": "m", "prompt": "a", "echo": true})", "echo", "not supported"},
      {R"({"model": "m", "prompt": "a", "best_of": 2})", "best_of", "not supported"},
      {R"({"model": "m", "prompt": "a", "suffix": "z"})", "suffix", "not supported"},
      {R"({"model": "m", "prompt": "a", "logprobs": 21})", "logprobs", "[0, 20]"},
  };
  for (const Case& c : cases) {
    const ApiError e = completion_error(c.body);
    EXPECT_EQ(e.status, 400) << c.body;
    EXPECT_EQ(e.param, c.param) << c.body;
    EXPECT_NE(std::string(e.what()).find(c.says), std::string::npos) << c.body << " -> " << e.what();
  }
}
