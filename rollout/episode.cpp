#include "rollout/episode.h"

#include <algorithm>
#include <memory>

#include "reward/designer_reward.h"
#include "rollout/parsing.h"
#include "rollout/prompts.h"

namespace spade::rollout {

namespace {

struct LiveEpisode {
  size_t index;                              // into specs/results
  std::unique_ptr<envsandbox::Game> game;
  bool done = false;
};

}  // namespace

std::vector<EpisodeResult> play_episodes(PolicyRef policy, envsandbox::EnvServer& server,
                                         const std::vector<EpisodeSpec>& specs,
                                         const EpisodeOptions& options, uint64_t seed) {
  std::vector<EpisodeResult> results(specs.size());
  std::vector<LiveEpisode> live;

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
    r.sample.append_context(policy.chat.render(
        {{"system", agent_system_prompt()}, {"user", agent_first_turn(*obs, spec.hint)}},
        /*add_generation_prompt=*/true));
    live.push_back({i, std::move(game), false});
  }

  // 2. Turns: decode all live histories together, then step each environment.
  for (int turn = 0; turn < options.max_turns; ++turn) {
    std::vector<LiveEpisode*> active;
    std::vector<std::vector<int64_t>> prompts;
    int max_new = 0;
    for (LiveEpisode& e : live) {
      if (e.done) continue;
      EpisodeResult& r = results[e.index];
      const int context_left = options.context_tokens - static_cast<int>(r.sample.tokens.size());
      if (context_left <= options.reserve_tokens) {  // full context: end as truncated
        r.truncated = true;
        e.done = true;
        continue;
      }
      active.push_back(&e);
      prompts.push_back(r.sample.tokens);
      max_new = std::max(max_new, std::min(options.sampling.max_new_tokens,
                                           context_left - options.reserve_tokens));
    }
    if (active.empty()) break;
    SamplingParams params = options.sampling;
    params.max_new_tokens = max_new;
    params.stop_token_ids = {policy.chat.eos_id()};
    std::vector<GenerationResult> outs =
        generate(policy.model, prompts, params, seed + static_cast<uint64_t>(turn) * 1000003ULL,
                 options.max_batch);

    for (size_t a = 0; a < active.size(); ++a) {
      LiveEpisode& e = *active[a];
      EpisodeResult& r = results[e.index];
      GenerationResult& out = outs[a];
      const int budget = std::min(options.sampling.max_new_tokens,
                                  options.context_tokens - static_cast<int>(r.sample.tokens.size()) -
                                      options.reserve_tokens);
      if (static_cast<int>(out.tokens.size()) > budget) {  // over this episode's own budget
        out.tokens.resize(budget);
        out.logprobs.resize(budget);
        out.finish_reason = "length";
      }
      r.sample.append_sampled(out.tokens, out.logprobs);
      r.turns = turn + 1;
      if (out.finish_reason != "stop") {  // no EOS: truncated, environment not stepped (reference §3)
        r.truncated = true;
        e.done = true;
        continue;
      }
      std::vector<int64_t> text_ids(out.tokens.begin(), out.tokens.end() - 1);  // drop EOS
      const std::string action = parse_action(policy.tokenizer.decode(text_ids));
      r.actions.push_back(action);
      envsandbox::GameStep step = e.game->step(action);
      if (!step.failure.empty()) r.failure = step.failure;
      if (step.terminated || step.truncated || !step.failure.empty()) {
        r.terminated = step.terminated;
        r.truncated = step.truncated;
        r.reward = reward::episode_reward(step.terminated, step.reward);
        e.done = true;
        continue;
      }
      r.sample.append_context(policy.chat.ids_for_user_turn(step.obs));
    }
  }
  for (LiveEpisode& e : live) {
    if (!e.done) results[e.index].truncated = true;  // turn limit
  }
  for (EpisodeResult& r : results) r.sample.reward = r.reward;
  return results;
}

}  // namespace spade::rollout
