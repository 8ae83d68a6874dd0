// The reward bookkeeping of one self-play step (docs/design.md "One self-play step"; reference §5, §6) as
// plain functions over plain structs: agent advantages and batch filters, window rewards, hint
// regret, memory records, the delayed designer reward and its advantages. No EnvServer, no model, no
// torch: selfplay.cpp feeds them the plays' outcomes and tests feed them canned ones
// (tests/trainer/test_selfplay_bookkeeping.cpp). Every function is deterministic (same inputs, same
// bits) and thread-compatible: it touches only its arguments.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "reward/designer_reward.h"
#include "reward/learning_potential.h"
#include "trainer/batch_filters.h"
#include "trainer/env_memory.h"
#include "trainer/selfplay_state.h"

namespace spade::trainer {

/// How one play (hinted or not) of an environment ended, as the bookkeeping sees it.
struct PlayOutcome {
  std::string env_id;
  double reward = 0;
  bool truncated = false;
  bool step_timeout = false;   // the environment's step() ran past its deadline (the regret_based penalty)
  int turns = 0;
  int64_t sampled_tokens = 0;  // the play's trainable (sampled) tokens
};

/// What the agent plays of one step give the learner and the step record.
struct AgentScores {
  std::vector<double> rewards;      // per play, in play order
  std::vector<double> advantages;   // per-environment z-scores (or r - mean), aligned with rewards
  BatchFilterResult filter;         // which plays train (trainer/batch_filters.h)
  int64_t turns = 0, successes = 0, sampled_tokens = 0;  // sums over the plays; success: reward > 0
  double reward_mean = 0;           // mean reward, 0 with no play
  double success_rate = 0;          // successes / plays, 0 with no play
  double turns_mean = 0;            // turns / plays, 0 with no play
  double learnable_share = 0;       // designer/learnable_share over the designed environments
};

/// Options of score_agent_plays (config reward.*).
struct AgentScoring {
  double std_eps = 1e-6;        // reward.actor_std_eps
  bool scale_by_std = true;     // reward.scale_by_std (false: Dr.GRPO's r - mean)
  BatchFilterOptions filters;   // reward.filter_zero_std_groups, reward.mask_truncated
};

/// Scores one step's no-hint plays: `plays` are consecutive groups of `plays_per_env` plays, group e
/// being live[e]'s (so plays.size() == live.size() * plays_per_env). Advantages are
/// reward::actor_advantages over the env_id groups; the filter is filter_agent_plays; the learnable
/// share counts the environments with from_seed unset, each with its wins / plays_per_env.
/// Throws spade::Error when plays.size() != live.size() * plays_per_env.
AgentScores score_agent_plays(const std::vector<PlayOutcome>& plays, const std::vector<LiveEnv>& live,
                              int plays_per_env, const AgentScoring& options);

/// Adds the step's no-hint plays to their environments' windows (group e of plays_per_env plays
/// belongs to live[e]): every reward to window_rewards, step_timeout set when a play's step() timed
/// out. On a regeneration step also r_nohint (+= reward / plays_per_env per play) and the summary's
/// no-hint counts (nohint_success_sum += reward > 0, nohint_plays += 1 per play).
/// Throws spade::Error when plays.size() != live.size() * plays_per_env.
void record_window(std::vector<LiveEnv>& live, const std::vector<PlayOutcome>& plays, int plays_per_env,
                   bool regeneration, SelfPlaySummary& summary);

/// The hinted plays of a new generation: each environment's r_hint is the mean reward of its hinted
/// plays (0 with none: a failed hint is not played); the summary's hinted counts grow
/// (hint_success_sum += reward > 0, hint_plays += 1 per play). Returns the mean r_hint over `live`
/// (0 when empty), logged as designer/hint_reward.
double record_hinted(std::vector<LiveEnv>& live, const std::vector<PlayOutcome>& hinted, SelfPlaySummary& summary);

/// Regeneration step, after record_window: each environment's hint regret
/// (reward::hint_regret({r_hint}, {r_nohint}, hint non-empty)) and, for designed environments
/// (from_seed unset), one memory record {path, skill, code, wins / window plays, regret, step}
/// appended to `memory` in live order. Returns the mean regret (designer/regret; 0 when empty).
double close_regret(std::vector<LiveEnv>& live, EnvMemory& memory, int64_t step);

/// Mean regret of the live generation (0 when empty): designer/regret between regenerations.
double mean_regret(const std::vector<LiveEnv>& live);

/// The window-to-date blend estimate of the live generation (designer/blend on a step that trains no
/// designer sample): mean over `live` of blend_reward(regret, mean(window_rewards)); 0 when empty.
double window_blend(const std::vector<LiveEnv>& live, const reward::BlendConfig& blend);

/// A buffered designer sample, as the designer scoring sees it.
struct DesignerSampleKey {
  std::string env_id;
  std::string skill;
};

/// Options of score_designer_samples (config reward.* and selfplay.*).
struct DesignerScoring {
  reward::DesignerRewardConfig reward;  // which variant, its weights
  int plays_per_env = 1;                // selfplay.plays_per_env (the actor batch size n_actor)
  int k = 1;                            // selfplay.k
  double scale_cap = 1;                 // reward.designer_scale_cap
};

/// The delayed designer reward of a closing generation (reference §5).
struct DesignerScores {
  std::vector<double> rewards;      // raw reward per buffered sample, in buffer order
  std::vector<double> advantages;   // per-skill centred, scaled by `scale`
  double blend_mean = 0;            // mean of rewards (designer/blend; 0 when no sample)
  double scale = 0;                 // designer_reward_scale(live.size() * plays_per_env, samples, k, cap)
  std::map<std::string, double> lp_gap;  // per skill: fast - slow EMA after this round (designer/lp_gap/<skill>)
};

/// Scores the buffered designer samples of the live generation over its window: each sample's window
/// statistics come from the live environment with its env_id (all zero when none), its skill's slow
/// EMA before this round is the learning-potential baseline; then `ema` advances one step per skill
/// with the mean window reward of each of that skill's environments (Sec. 7.2), and the advantages
/// are reward::designer_advantages at reward::designer_reward_scale.
DesignerScores score_designer_samples(const std::vector<DesignerSampleKey>& samples, const std::vector<LiveEnv>& live,
                                      reward::LearningPotentialTracker& ema, const DesignerScoring& options);

}  // namespace spade::trainer
