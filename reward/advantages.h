// Advantages: GRPO group advantages, SPADE's actor (per-environment z-score) and designer
// (per-skill centring, scale S) advantages.
//
// Sources: [anchors 1] trainer-anchors §1 in docs/sources.md (slime/verl/TRL/OpenRLHF);
//          [ref 5] reference §5 (docs/sources.md); [paper] SPADE Sec. 4.1 "Stabilizing
//          joint two-role training" (standardize agent returns within each environment's rollouts,
//          mean-centre designer rewards within each skill, upweight the designer).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace spade::reward {

/// GRPO group advantages [anchors 1]: (r - mean) / (std + eps) with the UNBIASED (Bessel, n-1)
/// std; scale_by_std = false gives the Dr.GRPO form r - mean. A group of size 1 gets 0; an
/// all-equal group gets zeros (exactly: r - mean is computed as 0). eps has no default on purpose:
/// slime/verl use 1e-6, TRL 1e-4, OpenRLHF 1e-9, SPADE's actor 1e-8 (kActorAdvantageEps).
/// Throws spade::Error ending "[non_finite_reward]", naming the reward, when one is NaN or infinite
/// (one would turn the whole group's mean and std, hence every advantage, into NaN); and for an eps
/// that is negative or not finite.
std::vector<double> group_advantages(const std::vector<double>& rewards, double eps, bool scale_by_std = true);

/// SPADE actor std epsilon [ref 5]: (r - mean_game) / (std_game + 1e-8).
inline constexpr double kActorAdvantageEps = 1e-8;

/// Actor advantages [ref 5; paper Sec. 4.1]: per-environment z-score over that step's plays of the
/// environment. group_ids[i] names the environment of play i (e.g. the game's path); plays sharing an
/// id form one group, scored with group_advantages(.., eps, scale_by_std). scale_by_std = true is
/// SPADE's (r - mean_game) / (std_game + eps) [ref 5]; false is Dr.GRPO's r - mean_game [anchors 1]
/// (config reward.scale_by_std). Output is in input order. Throws spade::Error if the sizes differ, and
/// the non_finite_reward error naming the play and its environment for a NaN or infinite reward.
std::vector<double> actor_advantages(const std::vector<double>& rewards, const std::vector<std::string>& group_ids,
                                     double eps = kActorAdvantageEps, bool scale_by_std = true);

/// Designer scale S [ref 5; authors' compute_env_reward_scale]: min(n_actor / n_env * k, cap),
/// cap 50 (games: 192 / 24 * 4 = 32; tool use hits the cap). Returns 1 when n_actor <= 0 or
/// n_env <= 0 (nothing to balance). Throws spade::Error if k <= 0 or cap is not finite and > 0.
double designer_reward_scale(int64_t n_actor_samples, int64_t n_env_samples, int64_t k, double cap = 50.0);

/// One buffered designer sample: its skill and its raw designer reward (designer_raw_reward).
struct DesignerSample {
  std::string skill;
  double reward = 0.0;
};

/// Designer advantages [ref 5; paper Sec. 4.1]: (reward - mean over same-skill samples) * scale.
/// No std division (a small per-skill group makes std blow rewards up; authors' comment).
/// Output is in input order. Throws the non_finite_reward error naming the sample and its skill for a
/// NaN or infinite reward, and spade::Error for a scale that is not finite.
std::vector<double> designer_advantages(const std::vector<DesignerSample>& samples, double scale);

}  // namespace spade::reward
