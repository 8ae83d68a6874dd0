// serve/api_response.h: the exact bytes of OpenAI-shaped bodies and of the server-sent-events framing,
// against hand-written expected strings (OpenAI's API reference shapes: chat.completion.chunk,
// text_completion, the error object; SSE: "data: <json>\n\n" ... "data: [DONE]\n\n").
#include <gtest/gtest.h>

#include "serve/api_response.h"

using namespace spade::serve;
using json = nlohmann::ordered_json;

TEST(ApiResponse, ErrorObjectHasMessageTypeParamCode) {
  EXPECT_EQ(dump_json(error_json(ApiError(400, "bad n", "n"))),
            R"({"error":{"message":"bad n","type":"invalid_request_error","param":"n","code":null}})");
  EXPECT_EQ(dump_json(error_json(ApiError(404, "no such model", "model", "model_not_found"))),
            R"({"error":{"message":"no such model","type":"invalid_request_error","param":"model","code":"model_not_found"}})");
  EXPECT_EQ(dump_json(error_json(ApiError(500, "boom"))),
            R"({"error":{"message":"boom","type":"server_error","param":null,"code":null}})");
}

TEST(ApiResponse, ServerSentEventFraming) {
  EXPECT_EQ(sse_event(json{{"a", 1}}), "data: {\"a\":1}\n\n");
  EXPECT_STREQ(kSseDone, "data: [DONE]\n\n");
  // A newline inside a string stays escaped: one event is one "data:" line.
  EXPECT_EQ(sse_event(json{{"t", "x\ny"}}), "data: {\"t\":\"x\\ny\"}\n\n");
  // Half a UTF-8 character (a model can sample one) is replaced, never thrown on.
  EXPECT_EQ(sse_event(json{{"t", std::string("a\xE2\x82")}}), "data: {\"t\":\"a\xEF\xBF\xBD\"}\n\n");
}

TEST(ApiResponse, ChatChunkAndChoiceShapes) {
  json chunk = response_head("chatcmpl-1", "chat.completion.chunk", 1700000000, "tiny");
  chunk["choices"] = json::array({chat_chunk_choice(0, {{"content", "Hi"}}, nullptr, "")});
  EXPECT_EQ(sse_event(chunk),
            "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1700000000,\"model\":\"tiny\","
            "\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"},\"logprobs\":null,\"finish_reason\":null}]}\n\n");
  EXPECT_EQ(dump_json(chat_chunk_choice(1, json::object(), nullptr, "stop")),
            R"({"index":1,"delta":{},"logprobs":null,"finish_reason":"stop"})");
  const std::vector<ReplyToolCall> calls = {{"call_a", "get_weather", R"({"city":"Paris"})"}};
  EXPECT_EQ(dump_json(chat_choice(0, "", calls, nullptr, "tool_calls")),
            R"({"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_a","type":"function",)"
            R"("function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]},"logprobs":null,"finish_reason":"tool_calls"})");
  EXPECT_EQ(dump_json(tool_calls_delta(calls)),
            R"({"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]})");
  EXPECT_EQ(dump_json(chat_choice(0, "Hello", {}, nullptr, "length")),
            R"({"index":0,"message":{"role":"assistant","content":"Hello"},"logprobs":null,"finish_reason":"length"})");
}

TEST(ApiResponse, LogprobsShapes) {
  const std::vector<TokenInfo> tokens = {{"He", -0.5f, {{"He", -0.5f}, {"A", -1.5f}}}, {"y", -0.25f, {{"y", -0.25f}, {"!", -2.0f}}}};
  EXPECT_EQ(dump_json(chat_logprobs(tokens)),
            R"({"content":[{"token":"He","logprob":-0.5,"bytes":[72,101],"top_logprobs":[{"token":"He","logprob":-0.5,"bytes":[72,101]},)"
            R"({"token":"A","logprob":-1.5,"bytes":[65]}]},{"token":"y","logprob":-0.25,"bytes":[121],"top_logprobs":[)"
            R"({"token":"y","logprob":-0.25,"bytes":[121]},{"token":"!","logprob":-2.0,"bytes":[33]}]}]})");
  // text_offset: each token's text laid end to end from the offset given (here 10 bytes already sent).
  EXPECT_EQ(dump_json(completion_logprobs(tokens, true, 10)),
            R"({"tokens":["He","y"],"token_logprobs":[-0.5,-0.25],"top_logprobs":[{"He":-0.5,"A":-1.5},{"y":-0.25,"!":-2.0}],"text_offset":[10,12]})");
  EXPECT_EQ(dump_json(completion_logprobs(tokens, false, 0)),
            R"({"tokens":["He","y"],"token_logprobs":[-0.5,-0.25],"top_logprobs":null,"text_offset":[0,2]})");
  EXPECT_EQ(dump_json(usage_json(7, 5)), R"({"prompt_tokens":7,"completion_tokens":5,"total_tokens":12})");
}
