#include "rollout/agent_turn.h"

#include "rollout/parsing.h"

namespace spade::rollout {

ResponseStep step_response(envsandbox::Game& game, policy::ChatFormat format, const std::string& response, bool tool_use) {
  ResponseStep out;
  const std::vector<ToolCall> calls = !tool_use                               ? std::vector<ToolCall>{}
                                      : format == policy::ChatFormat::kLlama3 ? parse_llama3_tool_call(response)
                                                                              : parse_tool_calls(response);
  if (calls.empty()) {
    out.actions.push_back(tool_use ? response : parse_action(response));
    out.step = game.step(out.actions.back());
    return out;
  }
  for (const ToolCall& call : calls) {
    out.actions.push_back(tool_call_action(call));
    ++out.tool_calls;
    out.malformed_tool_calls += call.ok() ? 0 : 1;
    out.step = game.step(out.actions.back());
    if (out.ended()) break;
    out.tool_results.push_back(out.step.obs);
  }
  return out;
}

std::vector<int64_t> complete_turn(Sample& sample, int64_t response_begin, const policy::ChatTemplate& chat,
                                   int64_t stopped_on, const std::string& response, const ResponseStep& rs) {
  const auto now = [&] { return static_cast<int64_t>(sample.tokens.size()); };
  if (rs.tool_calls > 0) sample.tool_segments.push_back({response_begin, now(), ToolSegment::Kind::kCall});
  if (rs.ended()) return {};
  std::vector<int64_t> ids;
  if (stopped_on != chat.eos_id()) ids = chat.close_turn_ids();
  const int64_t result_begin = now() + static_cast<int64_t>(ids.size());
  const std::vector<int64_t> turn = !rs.tool_results.empty()
                                        ? chat.ids_for_tool_results(rs.tool_results)
                                        : chat.ids_for_turn(has_tool_call(response) ? "tool" : "user", rs.step.obs);
  ids.insert(ids.end(), turn.begin(), turn.end());
  sample.append_context(ids);
  if (!rs.tool_results.empty()) sample.tool_segments.push_back({result_begin, now(), ToolSegment::Kind::kResult});
  return ids;
}

}  // namespace spade::rollout
