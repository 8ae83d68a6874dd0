#include "reward/designer_reward.h"

#include <algorithm>
#include <cmath>

#include "common/error.h"

namespace spade::reward {

double episode_reward(bool terminated, double last_step_reward) {
  if (!terminated) return 0.0;
  if (std::isnan(last_step_reward)) return 0.0;  // a NaN from generated code earns nothing
  return std::clamp(last_step_reward, -1.0, 1.0);
}

double mean_or_zero(const std::vector<double>& values) {
  if (values.empty()) return 0.0;
  double sum = 0.0;
  for (double v : values) sum += v;
  return sum / static_cast<double>(values.size());
}

double population_variance(const std::vector<double>& values) {
  if (values.empty()) return 0.0;
  const double mean = mean_or_zero(values);
  double ss = 0.0;
  for (double v : values) ss += (v - mean) * (v - mean);
  return ss / static_cast<double>(values.size());
}

HintRegret hint_regret(const std::vector<double>& hinted_rewards,
                       const std::vector<double>& nohint_rewards, bool hint_ok) {
  HintRegret out;
  out.r_hint = hint_ok ? mean_or_zero(hinted_rewards) : 0.0;
  out.r_nohint = mean_or_zero(nohint_rewards);
  out.regret = out.r_hint - out.r_nohint;
  return out;
}

double normalised_regret(double regret, double scale) {
  if (!(scale > 0.0)) throw spade::Error("normalised_regret: regret scale must be > 0, got " + std::to_string(scale));
  return std::clamp(regret / scale, 0.0, 1.0);
}

double plateau(double w, const PlateauConfig& c) {
  if (!(c.low <= c.high) || !(c.ramp > 0.0)) {
    throw spade::Error("plateau: need low <= high and ramp > 0 (got low " + std::to_string(c.low) + ", high " +
                       std::to_string(c.high) + ", ramp " + std::to_string(c.ramp) + ")");
  }
  if (w < c.low) return std::max(0.0, 1.0 - (c.low - w) / c.ramp);
  if (w > c.high) return std::max(0.0, 1.0 - (w - c.high) / c.ramp);
  return 1.0;
}

double frontier_penalty(double w, double scale) {
  if (!(scale > 0.0)) throw spade::Error("frontier_penalty: scale must be > 0, got " + std::to_string(scale));
  return -(w - 0.5) * (w - 0.5) / scale;
}

double blend_reward(double regret, double window_mean, const BlendConfig& c) {
  double out = c.regret_weight * normalised_regret(regret, c.regret_scale) +
               c.plateau_weight * plateau(window_mean, c.plateau);
  if (c.frontier_weight != 0.0) out += c.frontier_weight * frontier_penalty(window_mean, c.frontier_scale);
  return out;
}

double solver_variance_bonus(const std::vector<double>& play_rewards) {
  const double var = population_variance(play_rewards);
  return std::exp(-(var - 0.25) * (var - 0.25) / 0.02);
}

namespace {
struct VariantName {
  DesignerReward variant;
  const char* name;
};
constexpr VariantName kVariantNames[] = {
    {DesignerReward::Blend, "blend"},
    {DesignerReward::RegretBased, "regret_based"},
    {DesignerReward::LearningPotential, "learning_potential"},
    {DesignerReward::SolveRate, "solve_rate"},
};
}  // namespace

std::string to_string(DesignerReward variant) {
  for (const auto& v : kVariantNames)
    if (v.variant == variant) return v.name;
  throw spade::Error("to_string: unknown DesignerReward value " + std::to_string(static_cast<int>(variant)));
}

DesignerReward parse_designer_reward(const std::string& name) {
  std::string valid;
  for (const auto& v : kVariantNames) {
    if (name == v.name) return v.variant;
    valid += valid.empty() ? "" : ", ";
    valid += v.name;
  }
  throw spade::Error("unknown designer reward '" + name + "'; valid names: " + valid);
}

double designer_raw_reward(const DesignerWindowStats& s, const DesignerRewardConfig& c) {
  const double regret = s.r_hint - s.r_nohint;
  const double w = mean_or_zero(s.window_rewards);
  switch (c.variant) {
    case DesignerReward::Blend:
      return blend_reward(regret, w, c.blend);
    case DesignerReward::RegretBased:
      if (s.step_timeout) return c.step_timeout_penalty;
      return std::max(0.0, regret);
    case DesignerReward::LearningPotential: {
      if (s.window_rewards.empty()) return 0.0;
      double out = std::abs(w - s.skill_mu_slow);
      // The authors add the bonus only with more than one play (a single play has variance 0).
      if (c.solver_variance && s.window_rewards.size() > 1) out += solver_variance_bonus(s.window_rewards);
      return out;
    }
    case DesignerReward::SolveRate:
      return plateau(w, c.blend.plateau);
  }
  throw spade::Error("designer_raw_reward: unknown DesignerReward value");
}

}  // namespace spade::reward
