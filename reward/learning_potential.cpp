#include "reward/learning_potential.h"

#include <cmath>

#include "common/error.h"

namespace spade::reward {

double ema_update(double mu, double r, double gamma) { return (1.0 - gamma) * mu + gamma * r; }

SkillEma::SkillEma(const LearningPotentialConfig& config) : config_(config) {
  if (!(config.gamma_slow > 0.0 && config.gamma_slow < config.gamma_fast && config.gamma_fast <= 1.0)) {
    throw spade::Error("learning potential: need 0 < gamma_slow < gamma_fast <= 1 (got gamma_fast " +
                       std::to_string(config.gamma_fast) + ", gamma_slow " + std::to_string(config.gamma_slow) +
                       ")");
  }
}

double SkillEma::update(double r) {
  if (!initialised_) {
    mu_fast_ = mu_slow_ = r;
    initialised_ = true;
    return 0.0;
  }
  mu_fast_ = ema_update(mu_fast_, r, config_.gamma_fast);
  mu_slow_ = ema_update(mu_slow_, r, config_.gamma_slow);
  return learning_potential();
}

double SkillEma::signed_learning_potential() const {
  if (!initialised_) return 0.0;
  return (mu_fast_ - mu_slow_) / (2.0 * (config_.gamma_fast - config_.gamma_slow));
}

double SkillEma::learning_potential() const { return std::abs(signed_learning_potential()); }

void SkillEma::restore(double mu_fast, double mu_slow) {
  mu_fast_ = mu_fast;
  mu_slow_ = mu_slow;
  initialised_ = true;
}

LearningPotentialTracker::LearningPotentialTracker(const LearningPotentialConfig& config) : config_(config) {
  SkillEma check(config);  // validate eagerly
  (void)check;
}

SkillEma& LearningPotentialTracker::at(const std::string& skill) {
  auto it = skills_.find(skill);
  if (it == skills_.end()) it = skills_.emplace(skill, SkillEma(config_)).first;
  return it->second;
}

double LearningPotentialTracker::update(const std::string& skill, double r) { return at(skill).update(r); }

void LearningPotentialTracker::update_round(const std::vector<std::pair<std::string, double>>& env_means) {
  std::map<std::string, std::pair<double, int>> sums;  // skill -> (sum, count)
  for (const auto& [skill, r] : env_means) {
    if (!std::isfinite(r))
      throw spade::Error("learning potential: non-finite mean return " + std::to_string(r) + " for skill '" + skill +
                         "'");
    auto& [sum, n] = sums[skill];
    sum += r;
    ++n;
  }
  for (const auto& [skill, sn] : sums) update(skill, sn.first / sn.second);
}

const SkillEma* LearningPotentialTracker::find(const std::string& skill) const {
  auto it = skills_.find(skill);
  return it == skills_.end() ? nullptr : &it->second;
}

double LearningPotentialTracker::baseline(const std::string& skill) const {
  const SkillEma* e = find(skill);
  return e ? e->baseline() : 0.0;
}

}  // namespace spade::reward
