#include "rollout/episode.h"

#include <algorithm>
#include <chrono>
#include <memory>
#include <optional>

#include "common/error.h"
#include "reward/designer_reward.h"
#include "rollout/agent_turn.h"
#include "rollout/prompts.h"

namespace spade::rollout {

namespace {

struct LiveEpisode {
  size_t index;                              // into specs/results
  std::unique_ptr<envsandbox::Game> game;
  size_t seq = 0;                            // its sequence in the GenerationSession
  std::chrono::steady_clock::time_point started;  // after its reset (EpisodeOptions::episode_timeout_s)
};

}  // namespace

std::vector<EpisodeResult> play_episodes(PolicyRef policy, envsandbox::EnvServer& server,
                                         const std::vector<EpisodeSpec>& specs,
                                         const EpisodeOptions& options, uint64_t seed, SamplerStats* stats) {
  std::vector<EpisodeResult> results(specs.size());
  std::vector<LiveEpisode> live;
  GenerationSession session(policy.model);  // per-episode KV caches, kept across turns
  const double logprob_temperature = options.sampling.temperature > 0 ? options.sampling.temperature : 1.0;

  // 1. Open and reset every environment; render the first turn (reference §3).
  for (size_t i = 0; i < specs.size(); ++i) {
    const EpisodeSpec& spec = specs[i];
    EpisodeResult& r = results[i];
    r.sample.role = Role::Agent;
    r.sample.env_id = spec.env_id;
    r.sample.skill = spec.skill;
    std::string reason;
    auto game = envsandbox::Game::open(server, spec.source, options.max_turns_cap, &reason, nullptr, &r.process);
    if (!game) {
      r.failure = reason.empty() ? "load_failed" : reason;
      continue;
    }
    std::optional<std::string> obs = game->reset(spec.seed, &reason, nullptr, &r.process);
    if (!obs) {
      r.failure = reason.empty() ? "reset_failed" : reason;
      continue;
    }
    r.first_observation = *obs;
    r.sample.temperature = logprob_temperature;
    std::vector<policy::ChatMessage> opening = {{"system", agent_system_prompt()}, {"user", agent_first_turn(*obs, spec.hint)}};
    if (spec.tool_use) {
      std::optional<nlohmann::ordered_json> tools = game->tools(&reason);
      if (!tools) {
        r.failure = reason;
        continue;
      }
      const std::vector<nlohmann::ordered_json> schemas(tools->begin(), tools->end());
      opening = policy::tool_use_opening(policy.chat.format(), agent_tool_system_prompt(),
                                         agent_tool_first_turn(*obs, spec.hint), schemas);
    }
    r.sample.append_context(policy.chat.render(opening, /*add_generation_prompt=*/true));
    live.push_back({i, std::move(game), session.add_sequence(r.sample.tokens), std::chrono::steady_clock::now()});
  }
  auto finish = [&](LiveEpisode& e) { session.release(e.seq); };
  auto over_time = [&](const LiveEpisode& e) {
    return options.episode_timeout_s > 0 &&
           std::chrono::duration<double>(std::chrono::steady_clock::now() - e.started).count() > options.episode_timeout_s;
  };
  SamplingParams params = options.sampling;
  params.stop_token_ids = policy.stop_token_ids();  // the end of turn and every eos id of the checkpoint

  // Turn `turn` of episode e, or nullopt when the episode ends before it: the turn limit (truncated),
  // full context (truncated) or a per-turn budget min(cap, context_left - reserve) (reference §3) that
  // leaves nothing to sample.
  auto next_turn = [&](LiveEpisode& e, int turn) -> std::optional<GenerationSession::TurnRequest> {
    EpisodeResult& r = results[e.index];
    const int context_left = options.context_tokens - static_cast<int>(r.sample.tokens.size());
    const int cap = std::min(options.sampling.max_new_tokens, context_left - options.reserve_tokens);
    if (turn >= options.max_turns || context_left <= options.reserve_tokens || cap < 1) {
      r.truncated = true;
      finish(e);
      return std::nullopt;
    }
    if (!options.persistent_kv_cache) session.drop_cache(e.seq);  // reference path: re-prefill it all
    return GenerationSession::TurnRequest{e.seq, cap, sampling_stream(seed + static_cast<uint64_t>(turn) * 1000003ULL, e.index)};
  };

  // 2. Turns, continuously batched (GenerationSession::run_turns): when an episode's turn ends its
  //    environment is stepped and its next turn queued at once, while the other episodes decode on.
  std::vector<LiveEpisode*> by_seq(live.size());
  std::vector<GenerationSession::TurnRequest> first;
  for (LiveEpisode& e : live) {
    by_seq[e.seq] = &e;
    if (auto t = next_turn(e, 0)) first.push_back(*t);
  }
  auto on_turn_end = [&](const GenerationSession::TurnRequest& turn,
                         GenerationResult&& out) -> std::optional<GenerationSession::TurnRequest> {
    LiveEpisode& e = *by_seq[turn.id];
    EpisodeResult& r = results[e.index];
    const int64_t turn_begin = static_cast<int64_t>(r.sample.tokens.size());
    r.sample.append_sampled(out.tokens, out.logprobs);
    ++r.turns;
    if (out.finish_reason != FinishReason::kStop) {  // no EOS: truncated, environment not stepped (reference §3)
      r.truncated = true;
      finish(e);
      return std::nullopt;
    }
    if (over_time(e)) {  // the play's wall clock ran out: truncated before the step, reward 0
      r.truncated = true;
      r.failure = "episode_timeout";
      finish(e);
      return std::nullopt;
    }
    std::vector<int64_t> text_ids(out.tokens.begin(), out.tokens.end() - 1);  // drop EOS
    const std::string response = policy.tokenizer.decode(text_ids);
    // The step(s) of this turn (rollout/agent_turn.h): a tool-use turn steps each of its calls in order,
    // stopping at the first that ends the episode; any other turn steps one action.
    const ResponseStep rs = step_response(*e.game, policy.chat.format(), response, specs[e.index].tool_use);
    const envsandbox::GameStep& step = rs.step;
    r.actions.insert(r.actions.end(), rs.actions.begin(), rs.actions.end());
    r.tool_calls += rs.tool_calls;
    r.malformed_tool_calls += rs.malformed_tool_calls;
    r.process = step.failure;
    if (step.broken()) r.failure = envsandbox::call_status_name(step.failure);
    else if (!step.refused.empty()) r.failure = step.refused;  // e.g. reward_not_finite; reward -1 below
    // The observation answers a tool call as a `tool` turn, else as a `user` turn; the chat template
    // renders either in the checkpoint's format (policy/chat_template.h: role mapping). A turn that
    // stopped on another eos id of the checkpoint (e.g. Qwen3's <|endoftext|>) is first closed with the
    // template's end of turn, so the history stays in the chat format (the sampled id is kept).
    const std::vector<int64_t> obs_ids = complete_turn(r.sample, turn_begin, policy.chat, out.tokens.back(), response, rs);
    if (rs.ended()) {
      r.terminated = step.terminated;
      r.truncated = step.truncated;
      r.reward = reward::episode_reward(step.terminated, step.reward);
      finish(e);
      return std::nullopt;
    }
    session.append(e.seq, obs_ids);
    if (session.tokens(e.seq).size() != r.sample.tokens.size())
      throw spade::Error("play_episodes: internal error: session history diverged from the sample");
    return next_turn(e, r.turns);
  };
  session.run_turns(first, params, options.max_batch, on_turn_end, stats);
  for (EpisodeResult& r : results) r.sample.reward = r.reward;
  return results;
}

}  // namespace spade::rollout
