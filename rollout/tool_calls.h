// Tool calls in an agent's response, in the two forms Qwen models emit (reference
// §7: "Tool calls are parsed in Qwen JSON or XML form and returned as role: tool messages"), and the
// rendering of a tool's result as the next turn. Pure string functions (no torch, no Python);
// thread-safe.
//
//   JSON form (Qwen2.5 / Qwen3 function calling, their chat templates' tool instructions):
//     <tool_call>
//     {"name": "get_weather", "arguments": {"city": "Paris"}}
//     </tool_call>
//   ("arguments" may also arrive as a JSON-encoded string; "parameters" is accepted as a synonym.)
//   XML form (Qwen3-Coder's chat template):
//     <tool_call>
//     <function=get_weather>
//     <parameter=city>
//     Paris
//     </parameter>
//     </function>
//     </tool_call>
//   A parameter value is taken as JSON when it parses as JSON (numbers, true/false/null, objects,
//   arrays, quoted strings), else as the plain string with the one leading and trailing newline of the
//   template removed; a string parameter that happens to look like a number therefore arrives as a number
//   (no tool schema is consulted here; the environment's own parser decides).
// Only the text after the last "</think>" is searched (thinking mode, reference §3), as for \boxed{}.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace spade::rollout {

struct ToolCall {
  std::string name;             // function name; "" when the block could not be parsed
  nlohmann::json arguments;     // a JSON object ({} when the call has none)
  std::string error;            // "" when parsed; else what is wrong with the block
  std::string raw;              // the block's text between the tags (Llama 3: the JSON text), trimmed
  bool ok() const { return error.empty(); }
};

/// Every <tool_call>...</tool_call> block of `response` (after the last </think>), in order. A block
/// whose closing tag is missing runs to the end of the text (generation cut at a stop string). Blocks
/// that are neither form, or whose JSON is malformed, are returned with `error` set (e.g. "invalid JSON
/// at byte 12: ..."), so the caller can count format errors. Never throws.
std::vector<ToolCall> parse_tool_calls(std::string_view response);

/// Llama 3.1's JSON tool call (its chat template's instructions: 'Respond in the format {"name":
/// function name, "parameters": dictionary of argument name and its value}'): the response after the
/// last </think>, without an optional leading "<|python_tag|>" and surrounding whitespace, is one JSON
/// object with a string "name" and "parameters" (or "arguments"; an object, or a JSON-encoded object).
/// Empty when that text does not start with '{' (a plain reply or an answer); one call with `error`
/// set when it starts with '{' but is not such an object. Never throws.
std::vector<ToolCall> parse_llama3_tool_call(std::string_view response);

/// The text the environment's base class (ToolUseEnv.step) reads for `call`: when parsed,
/// "<tool_call>{"arguments": {...}, "name": NAME}</tool_call>" (compact JSON, whichever form the model
/// used); when malformed, "<tool_call>" + call.raw + "</tool_call>", which the base class answers with
/// its format error and penalty.
std::string tool_call_action(const ToolCall& call);

/// True when `response` (after the last </think>) contains a "<tool_call>" tag.
bool has_tool_call(std::string_view response);

}  // namespace spade::rollout
