// Per-regeneration measurements of the environments the agent trains on (issue 19, "Per
// regeneration"; SPADE §6.2, Fig. 8 and 9, App. I.1): how diverse a new generation's programs are, how
// many of them give their rule away in the first observation, and, when its window closes, how
// graded its rewards were and each environment's hint regret and win rate (the rollouts.h5 rows).
//
// Measured environments: the designed ones (LiveEnv::from_seed unset; seed fill-ins of empty slots
// are the seeds' diversity, not the designer's). In selfplay.mode fixed_pool there is no designer and
// every environment is a drawn pool program: all are measured, under the same designer/ names, so a
// fixed-pool baseline's diversity and reward levels sit beside SPADE's in `spade report` (with
// replacement, repeated draws lower its Vendi score: that is the draw's diversity).
// Torch-free plain functions; pure, thread-safe.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "trainer/selfplay_state.h"
#include "trainer/step_record.h"

namespace spade::trainer {

/// The measured environments of `live` (see above), in live order.
std::vector<const LiveEnv*> measured_environments(const std::vector<LiveEnv>& live, bool fixed_pool);

/// designer/vendi_score: the Vendi score (common/vendi.h) of `programs` under the cosine similarity of
/// their token 3-gram count vectors (common/code_ngrams.h). nullopt for no program; 1 for one.
std::optional<double> program_vendi_score(const std::vector<std::string>& programs);

/// Reward values closer than this are one level (rewards are doubles an environment computed).
inline constexpr double kRewardLevelTolerance = 1e-9;

/// The number of distinct values in `rewards` (sorted; a value within kRewardLevelTolerance of the
/// previous level joins it). 0 for no reward.
int distinct_reward_levels(const std::vector<double>& rewards);

/// The distinct levels strictly between 0 and 1 (partial credit: neither a loss, 0 or below, nor a
/// full win, 1), counted as distinct_reward_levels counts.
int partial_reward_levels(const std::vector<double>& rewards);

/// One play's first observation (the reset() observation, no hint appended), for formula_share.
struct FirstObservation {
  std::string env_id;
  std::string text;  // "" when reset failed
};

/// designer/formula_in_first_obs: the share of `envs` with at least one play in `plays` whose first
/// observation states a formula (trainer/formula_text.h states_formula). nullopt when `envs` is empty.
std::optional<double> formula_share(const std::vector<const LiveEnv*>& envs, const std::vector<FirstObservation>& plays);

/// Fills g.vendi_score, g.vendi_envs and g.formula_in_first_obs for the new generation `live` from
/// its measured environments' programs and `plays` (its no-hint plays of the regeneration step).
void describe_generation(const std::vector<LiveEnv>& live, bool fixed_pool, const std::vector<FirstObservation>& plays,
                         GenerationRecord& g);

/// The generation `live` whose window closes at step number `step` (selfplay.h numbering): the mean
/// reward levels over its measured environments' window_rewards, and one rollouts.h5 row per
/// environment (all of them, seed fill-ins included) with closed = step, window_plays = the window's
/// plays, win_rate = plays with reward > 0 / window_plays (NaN with no play), and regret = the hint
/// regret close_regret set (r_hint - r_nohint of its regeneration step; NaN in fixed_pool mode, where
/// no hint is written or played).
GenerationCloseRecord close_generation(const std::vector<LiveEnv>& live, bool fixed_pool, int64_t step);

}  // namespace spade::trainer
