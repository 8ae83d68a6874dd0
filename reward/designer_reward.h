// Episode reward and the Environment Designer's raw reward: hint regret, difficulty anchor (plateau),
// the deployed blend and its ablation variants.
//
// Pure arithmetic on plain structs (no torch; docs/design.md). Every formula names its source:
//   [paper]  the SPADE paper (docs/sources.md), section quoted in the comment;
//   [ref N]  reference §N in docs/sources.md (the authors' Python code, described).
#pragma once

#include <string>
#include <vector>

namespace spade::reward {

/// Episode reward of one agent episode [ref 3]: clamp(last step reward, -1, 1) if the episode
/// terminated, else 0 (truncated, out of turns, out of context, response without EOS).
double episode_reward(bool terminated, double last_step_reward);

/// Arithmetic mean; 0 for an empty vector (the authors' `_mean_or_zero`).
double mean_or_zero(const std::vector<double>& values);

/// Population variance (divide by n, numpy's default `np.var`); 0 for an empty vector.
double population_variance(const std::vector<double>& values);

/// Hint regret [paper Sec. 4.2, Eq. 3; ref 5]:
///   r_hint   = mean of the hinted plays (16 per environment in the games recipe);
///   r_nohint = mean of the no-hint plays at the regeneration step (same actor state);
///   regret   = r_hint - r_nohint.
/// A failed hint (hint writer error/timeout) counts as r_hint = 0 [ref 5].
struct HintRegret {
  double r_hint = 0.0;
  double r_nohint = 0.0;
  double regret = 0.0;
};
HintRegret hint_regret(const std::vector<double>& hinted_rewards,
                       const std::vector<double>& nohint_rewards, bool hint_ok = true);

/// Floored, normalised regret [paper Sec. 4.1 "floor the raw regret at zero ... normalized to
/// [0,1] by a fixed scale"; ref 5]: clip(regret / scale, 0, 1), scale default 0.15.
double normalised_regret(double regret, double scale = 0.15);

/// Flat-top difficulty anchor [paper Sec. 4.1 "pays environments whose win rate falls in a target
/// band and decays linearly outside it (band [0.4, 0.6])"; ref 5 ramp 0.25]:
///   plateau(w) = 1                          for low <= w <= high
///              = max(0, 1 - (low - w)/ramp)  for w < low
///              = max(0, 1 - (w - high)/ramp) for w > high
/// Defaults give 0 at w <= 0.15 and w >= 0.85.
struct PlateauConfig {
  double low = 0.4;
  double high = 0.6;
  double ramp = 0.25;
};
double plateau(double w, const PlateauConfig& config = {});

/// Deployed blend [paper Sec. 4.1 weights 0.4 / 0.6; ref 5]:
///   blend = regret_weight * normalised_regret(regret, regret_scale) + plateau_weight * plateau(w)
///           + frontier_weight * frontier_penalty(w, frontier_scale)
/// where w = mean raw actor reward over the k-step window. The frontier term is 0-weighted in all
/// paper runs [paper App. F.2; ref 5] and is kept only for ablations.
struct BlendConfig {
  double regret_weight = 0.4;
  double plateau_weight = 0.6;
  double regret_scale = 0.15;
  PlateauConfig plateau;
  double frontier_weight = 0.0;
  double frontier_scale = 0.08;
};
double blend_reward(double regret, double window_mean, const BlendConfig& config = {});

/// Frontier penalty [ref 5]: -(w - 0.5)^2 / scale, scale default 0.08 (<= 0; 0 at w = 0.5).
double frontier_penalty(double w, double scale = 0.08);

/// Solver-variance bonus for the learning-potential variant [ref 5; authors' compute_variance_reward]:
/// exp(-(var - 0.25)^2 / 0.02) with var the population variance of the plays (peaks at 1 when
/// var = 0.25, i.e. a 50/50 split of 0/1 rewards).
double solver_variance_bonus(const std::vector<double>& play_rewards);

/// The designer reward variant (ablations, ref 5 / paper Sec. 7.2).
///   Blend             : blend_reward (default; the deployed SPADE reward).
///   RegretBased       : max(0, regret); step_timeout_penalty (-0.5) when the environment's step()
///                       timed out.
///   LearningPotential : |mean(window plays) - mu_slow(skill)| (+ solver_variance_bonus if enabled).
///                       0 when the window holds no plays.
///   SolveRate         : plateau(w) only.
enum class DesignerReward { Blend, RegretBased, LearningPotential, SolveRate };

/// Canonical names: "blend", "regret_based", "learning_potential", "solve_rate".
std::string to_string(DesignerReward variant);
/// Parses a canonical name (exact, lower case). Throws spade::Error listing the valid names.
DesignerReward parse_designer_reward(const std::string& name);

/// What one buffered designer sample's environment produced over its k-step window.
struct DesignerWindowStats {
  double r_hint = 0.0;                  ///< mean hinted return at regeneration (0 if the hint failed)
  double r_nohint = 0.0;                ///< mean no-hint return at the regeneration step
  std::vector<double> window_rewards;   ///< every raw actor reward on this environment over the window
  double skill_mu_slow = 0.0;           ///< slow EMA of the environment's skill (LearningPotential baseline)
  bool step_timeout = false;            ///< the environment's step() timed out during play
};

struct DesignerRewardConfig {
  DesignerReward variant = DesignerReward::Blend;
  BlendConfig blend;                    ///< weights/scales for Blend; .plateau also used by SolveRate
  double step_timeout_penalty = -0.5;   ///< RegretBased only [ref 4, 5]
  bool solver_variance = false;         ///< LearningPotential: add solver_variance_bonus [ref 5]
};

/// The designer's raw (uncentred, unscaled) reward for one environment; see DesignerReward.
/// regret = r_hint - r_nohint in every variant that uses it (matched timing, paper Sec. 5.1:
/// "the regret subtracts hint and no-hint averages measured at the same regeneration step").
double designer_raw_reward(const DesignerWindowStats& stats, const DesignerRewardConfig& config = {});

}  // namespace spade::reward
