// Tool-call parsing in Qwen's two forms (rollout/tool_calls.h). The inputs are written in the exact
// layouts of the documented formats: the JSON form of the Qwen2.5/Qwen3 chat templates' tool
// instructions ("<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call>")
// and the XML form of Qwen3-Coder's template ("<tool_call>\n<function=NAME>\n<parameter=KEY>\nVALUE\n
// </parameter>\n</function>\n</tool_call>"); the expected name/arguments are read off the inputs by hand.
#include <gtest/gtest.h>

#include "rollout/tool_calls.h"

using namespace spade::rollout;
using nlohmann::json;

TEST(ToolCalls, QwenJsonForm) {
  auto calls = parse_tool_calls(
      "I will look it up.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": 3}}\n"
      "</tool_call>");
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_TRUE(calls[0].ok()) << calls[0].error;
  EXPECT_EQ(calls[0].name, "get_weather");
  EXPECT_EQ(calls[0].arguments, json({{"city", "Paris"}, {"days", 3}}));
}

TEST(ToolCalls, ArgumentsAsJsonStringAndMissingArguments) {
  auto calls = parse_tool_calls(
      "<tool_call>{\"name\": \"a\", \"arguments\": \"{\\\"x\\\": [1, 2]}\"}</tool_call>"
      "<tool_call>{\"name\": \"b\"}</tool_call>");
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(calls[0].arguments, json({{"x", {1, 2}}}));
  EXPECT_EQ(calls[1].name, "b");
  EXPECT_EQ(calls[1].arguments, json::object());
  EXPECT_TRUE(calls[1].ok());
}

TEST(ToolCalls, QwenXmlForm) {
  auto calls = parse_tool_calls(
      "<tool_call>\n<function=create_file>\n<parameter=path>\n/tmp/a.txt\n</parameter>\n"
      "<parameter=size>\n42\n</parameter>\n<parameter=body>\nline one\nline two\n</parameter>\n"
      "</function>\n</tool_call>");
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_TRUE(calls[0].ok()) << calls[0].error;
  EXPECT_EQ(calls[0].name, "create_file");
  // "42" parses as JSON -> a number; the two-line body keeps its inner newline, loses the outer ones.
  EXPECT_EQ(calls[0].arguments, json({{"path", "/tmp/a.txt"}, {"size", 42}, {"body", "line one\nline two"}}));
}

TEST(ToolCalls, OnlyAfterTheLastThinkBlock) {
  const std::string r = "<think><tool_call>{\"name\": \"draft\"}</tool_call></think>"
                        "<tool_call>{\"name\": \"final\", \"arguments\": {}}</tool_call>";
  auto calls = parse_tool_calls(r);
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].name, "final");
  EXPECT_TRUE(has_tool_call(r));
  EXPECT_FALSE(has_tool_call("<think><tool_call>{}</tool_call></think> \\boxed{3}"));
}

TEST(ToolCalls, UnclosedBlockRunsToTheEnd) {
  auto calls = parse_tool_calls("<tool_call>\n{\"name\": \"f\", \"arguments\": {\"k\": true}}\n");
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].name, "f");
  EXPECT_EQ(calls[0].arguments, json({{"k", true}}));
}

TEST(ToolCalls, MalformedBlocksCarryAnError) {
  auto calls = parse_tool_calls(
      "<tool_call>{\"name\": \"f\", \"arguments\": {</tool_call>"  // broken JSON
      "<tool_call>[1, 2]</tool_call>"                              // not an object
      "<tool_call>{\"arguments\": {}}</tool_call>"                 // no name
      "<tool_call>call f(1)</tool_call>"                           // neither form
      "<tool_call><function=g>\n<parameter=x>\n1\n</function></tool_call>");  // unclosed parameter
  ASSERT_EQ(calls.size(), 5u);
  for (const ToolCall& c : calls) EXPECT_FALSE(c.ok());
  EXPECT_NE(calls[0].error.find("invalid JSON"), std::string::npos);
  EXPECT_NE(calls[2].error.find("name"), std::string::npos);
  EXPECT_NE(calls[4].error.find("</parameter>"), std::string::npos);
  EXPECT_TRUE(parse_tool_calls("no calls here").empty());
}

// Issue 21: Llama 3.1's JSON tool call (its template: 'Respond in the format {"name": function name,
// "parameters": dictionary of argument name and its value}').
TEST(ToolCalls, Llama3JsonObjectForm) {
  auto c = parse_llama3_tool_call("  {\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}\n");
  ASSERT_EQ(c.size(), 1u);
  ASSERT_TRUE(c[0].ok()) << c[0].error;
  EXPECT_EQ(c[0].name, "get_weather");
  EXPECT_EQ(c[0].arguments, json({{"city", "Paris"}}));
  auto tagged = parse_llama3_tool_call("<|python_tag|>{\"name\": \"f\", \"arguments\": {}}");
  ASSERT_EQ(tagged.size(), 1u);
  EXPECT_TRUE(tagged[0].ok());
  EXPECT_TRUE(parse_llama3_tool_call("The answer is <answer>done</answer>").empty());
  EXPECT_TRUE(parse_llama3_tool_call("<think>{\"name\": \"x\"}</think>plain text").empty());
  auto bad = parse_llama3_tool_call("{\"name\": \"f\", \"parameters\": {");
  ASSERT_EQ(bad.size(), 1u);
  EXPECT_FALSE(bad[0].ok());
  EXPECT_EQ(bad[0].raw, "{\"name\": \"f\", \"parameters\": {");
}

// What the environment's base class receives: the canonical call, or a malformed block as written.
TEST(ToolCalls, ActionsForTheEnvironment) {
  auto calls = parse_tool_calls("<tool_call>\n<function=add>\n<parameter=n>\n5\n</parameter>\n</function>\n</tool_call>"
                                "<tool_call>\n{\"name\": \"add\", \"arguments\": {\n</tool_call>");
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(tool_call_action(calls[0]), "<tool_call>{\"arguments\":{\"n\":5},\"name\":\"add\"}</tool_call>");
  EXPECT_EQ(tool_call_action(calls[1]), "<tool_call>{\"name\": \"add\", \"arguments\": {</tool_call>");
}
