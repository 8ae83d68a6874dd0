#include "rollout/episode.h"

#include <algorithm>
#include <memory>

#include "common/error.h"
#include "reward/designer_reward.h"
#include "rollout/parsing.h"
#include "rollout/tool_calls.h"
#include "rollout/prompts.h"

namespace spade::rollout {

namespace {

struct LiveEpisode {
  size_t index;                              // into specs/results
  std::unique_ptr<envsandbox::Game> game;
  bool done = false;
  size_t seq = 0;                            // its sequence in the GenerationSession
};

}  // namespace

std::vector<EpisodeResult> play_episodes(PolicyRef policy, envsandbox::EnvServer& server,
                                         const std::vector<EpisodeSpec>& specs,
                                         const EpisodeOptions& options, uint64_t seed) {
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
    auto game = envsandbox::Game::open(server, spec.source, options.max_turns_cap, &reason);
    if (!game) {
      r.failure = reason.empty() ? "load_failed" : reason;
      continue;
    }
    std::optional<std::string> obs = game->reset(spec.seed, &reason);
    if (!obs) {
      r.failure = reason.empty() ? "reset_failed" : reason;
      continue;
    }
    r.sample.temperature = logprob_temperature;
    r.sample.append_context(policy.chat.render(
        {{"system", agent_system_prompt()}, {"user", agent_first_turn(*obs, spec.hint)}},
        /*add_generation_prompt=*/true));
    const size_t seq = options.persistent_kv_cache ? session.add_sequence(r.sample.tokens) : 0;
    live.push_back({i, std::move(game), false, seq});
  }
  auto finish = [&](LiveEpisode& e) {
    e.done = true;
    if (options.persistent_kv_cache) session.release(e.seq);
  };

  // 2. Turns: decode all live histories together, then step each environment.
  for (int turn = 0; turn < options.max_turns; ++turn) {
    std::vector<LiveEpisode*> active;
    std::vector<int> caps;  // per-episode budget: min(cap, context_left - reserve) (reference §3)
    for (LiveEpisode& e : live) {
      if (e.done) continue;
      EpisodeResult& r = results[e.index];
      const int context_left = options.context_tokens - static_cast<int>(r.sample.tokens.size());
      if (context_left <= options.reserve_tokens) {  // full context: end as truncated
        r.truncated = true;
        finish(e);
        continue;
      }
      active.push_back(&e);
      caps.push_back(std::min(options.sampling.max_new_tokens, context_left - options.reserve_tokens));
    }
    if (active.empty()) break;
    SamplingParams params = options.sampling;
    params.stop_token_ids = {policy.chat.eos_id()};
    const uint64_t turn_seed = seed + static_cast<uint64_t>(turn) * 1000003ULL;
    std::vector<GenerationResult> outs;
    if (options.persistent_kv_cache) {
      // Only the tokens appended since the last turn are prefilled; each episode stops at its own cap.
      std::vector<size_t> ids;
      for (LiveEpisode* e : active) ids.push_back(e->seq);
      outs = session.generate(ids, params, turn_seed, options.max_batch, caps);
    } else {
      // Reference path: re-prefill every history; run to the largest cap and cut each to its own
      // (the per-episode random streams make the cut identical to a per-episode cap).
      std::vector<std::vector<int64_t>> prompts;
      for (LiveEpisode* e : active) prompts.push_back(results[e->index].sample.tokens);
      params.max_new_tokens = *std::max_element(caps.begin(), caps.end());
      outs = generate(policy.model, prompts, params, turn_seed, options.max_batch);
    }

    for (size_t a = 0; a < active.size(); ++a) {
      LiveEpisode& e = *active[a];
      EpisodeResult& r = results[e.index];
      GenerationResult& out = outs[a];
      const int budget = caps[a];
      if (static_cast<int>(out.tokens.size()) > budget) {  // over this episode's own budget
        out.tokens.resize(budget);
        out.logprobs.resize(budget);
        out.finish_reason = "length";
      }
      r.sample.append_sampled(out.tokens, out.logprobs);
      r.turns = turn + 1;
      if (out.finish_reason != "stop") {  // no EOS: truncated, environment not stepped (reference §3)
        r.truncated = true;
        finish(e);
        continue;
      }
      std::vector<int64_t> text_ids(out.tokens.begin(), out.tokens.end() - 1);  // drop EOS
      const std::string response = policy.tokenizer.decode(text_ids);
      const std::string action = parse_action(response);
      r.actions.push_back(action);
      envsandbox::GameStep step = e.game->step(action);
      if (!step.failure.empty()) r.failure = step.failure;
      if (step.terminated || step.truncated || !step.failure.empty()) {
        r.terminated = step.terminated;
        r.truncated = step.truncated;
        r.reward = reward::episode_reward(step.terminated, step.reward);
        finish(e);
        continue;
      }
      // The observation answers a tool call as a `tool` turn, else as a `user` turn; the chat template
      // renders either in the checkpoint's format (policy/chat_template.h: role mapping).
      const std::vector<int64_t> obs_ids = policy.chat.ids_for_turn(has_tool_call(response) ? "tool" : "user", step.obs);
      r.sample.append_context(obs_ids);
      if (options.persistent_kv_cache) {
        session.append(e.seq, obs_ids);
        if (session.tokens(e.seq).size() != r.sample.tokens.size())
          throw spade::Error("play_episodes: internal error: session history diverged from the sample");
      }
    }
  }
  for (LiveEpisode& e : live) {
    if (!e.done) results[e.index].truncated = true;  // turn limit
  }
  for (EpisodeResult& r : results) r.sample.reward = r.reward;
  return results;
}

}  // namespace spade::rollout
