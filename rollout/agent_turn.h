// One agent response applied to its environment, and the turn that answers it: what play_episodes
// does after every sampled turn, shared with the cold start's demonstrations (trainer/warm_start.h),
// so a demonstration is tokenised exactly as a played episode. Torch-free; not thread-safe (the Game).
#pragma once
#include <string>
#include <vector>

#include "envsandbox/game.h"
#include "policy/chat_template.h"
#include "rollout/sample.h"
#include "rollout/tool_calls.h"

namespace spade::rollout {

/// The step(s) of one response.
struct ResponseStep {
  envsandbox::GameStep step;              // the last step taken (the one that ended the episode, if any)
  std::vector<std::string> actions;       // what was sent to step(), in order
  std::vector<std::string> tool_results;  // observations of the calls before the last step, in order
  int tool_calls = 0;                     // calls stepped (well-formed or not)
  int malformed_tool_calls = 0;           // of which the parser could not read
  bool ended() const { return step.terminated || step.truncated || step.broken(); }
};

/// Steps `response` (the decoded reply, without its stop token). Games: one step of parse_action's
/// \boxed{} action. Tool use: every tool call of the reply (parse_tool_calls, or Llama 3.1's JSON form
/// when `format` is kLlama3) in order as tool_call_action() text, stopping at the first step that
/// ends the episode; each call's observation goes to tool_results (the last step's too when the episode
/// goes on); a reply without a call is stepped as it is (an <answer>, or text the base class answers
/// with its format penalty).
ResponseStep step_response(envsandbox::Game& game, policy::ChatFormat format, const std::string& response, bool tool_use);

/// Completes the turn in `sample`, whose tokens from `response_begin` on are the sampled response
/// (its stop id `stopped_on` last). Records its tool segments: the response as a call when it stepped
/// calls; and, when the episode goes on, appends (loss mask 0) and returns what follows it: the chat
/// template's close of a turn that stopped on another eos id than the template's end of turn, then
/// the results of its tool calls as one tool turn (ChatTemplate::ids_for_tool_results, recorded as a
/// result segment), or the observation as a `tool` turn when the reply holds a <tool_call> tag, else
/// as a `user` turn. Returns {} when the episode ended (rs.ended()).
std::vector<int64_t> complete_turn(Sample& sample, int64_t response_begin, const policy::ChatTemplate& chat,
                                   int64_t stopped_on, const std::string& response, const ResponseStep& rs);

}  // namespace spade::rollout
