#include "reward/advantages.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "common/error.h"

namespace spade::reward {
namespace {

// Throws the non_finite_reward error for `value` unless it is finite; `which` names the input.
void require_finite(double value, const std::string& which) {
  if (std::isfinite(value)) return;
  throw spade::Error(which + " is " + std::to_string(value) +
                     ": advantages need finite rewards (a NaN or infinite reward from an environment is refused "
                     "where it enters, envsandbox::Game::step's reward_not_finite, and must never reach here) "
                     "[non_finite_reward]");
}

}  // namespace

std::vector<double> group_advantages(const std::vector<double>& rewards, double eps, bool scale_by_std) {
  const size_t n = rewards.size();
  for (size_t i = 0; i < n; ++i) require_finite(rewards[i], "group_advantages: reward " + std::to_string(i));
  if (!(eps >= 0.0) || !std::isfinite(eps))
    throw spade::Error("group_advantages: eps must be finite and >= 0, got " + std::to_string(eps));
  std::vector<double> out(n, 0.0);
  if (n < 2) return out;  // size 0 or 1: no baseline to compare against
  double mean = 0.0;
  for (double r : rewards) mean += r;
  mean /= static_cast<double>(n);
  bool all_equal = true;
  for (double r : rewards) all_equal = all_equal && (r == rewards[0]);
  if (all_equal) return out;  // exact zeros, independent of rounding in mean
  double ss = 0.0;
  for (double r : rewards) ss += (r - mean) * (r - mean);
  const double std = std::sqrt(ss / static_cast<double>(n - 1));  // Bessel
  const double denom = scale_by_std ? std + eps : 1.0;
  for (size_t i = 0; i < n; ++i) out[i] = (rewards[i] - mean) / denom;
  return out;
}

std::vector<double> actor_advantages(const std::vector<double>& rewards, const std::vector<std::string>& group_ids,
                                     double eps, bool scale_by_std) {
  if (rewards.size() != group_ids.size()) {
    throw spade::Error("actor_advantages: " + std::to_string(rewards.size()) + " rewards but " +
                       std::to_string(group_ids.size()) + " group ids");
  }
  for (size_t i = 0; i < rewards.size(); ++i)
    require_finite(rewards[i], "actor_advantages: the reward of play " + std::to_string(i) + " (environment '" +
                                   group_ids[i] + "')");
  std::map<std::string, std::vector<size_t>> groups;
  for (size_t i = 0; i < rewards.size(); ++i) groups[group_ids[i]].push_back(i);
  std::vector<double> out(rewards.size(), 0.0);
  for (const auto& [id, idx] : groups) {
    std::vector<double> r;
    r.reserve(idx.size());
    for (size_t i : idx) r.push_back(rewards[i]);
    const std::vector<double> a = group_advantages(r, eps, scale_by_std);
    for (size_t j = 0; j < idx.size(); ++j) out[idx[j]] = a[j];
  }
  return out;
}

double designer_reward_scale(int64_t n_actor_samples, int64_t n_env_samples, int64_t k, double cap) {
  if (k <= 0) throw spade::Error("designer_reward_scale: k must be > 0, got " + std::to_string(k));
  if (!(cap > 0.0) || !std::isfinite(cap))
    throw spade::Error("designer_reward_scale: cap must be finite and > 0, got " + std::to_string(cap));
  if (n_actor_samples <= 0 || n_env_samples <= 0) return 1.0;
  const double s = static_cast<double>(n_actor_samples) / static_cast<double>(n_env_samples) * static_cast<double>(k);
  return std::min(s, cap);
}

std::vector<double> designer_advantages(const std::vector<DesignerSample>& samples, double scale) {
  for (size_t i = 0; i < samples.size(); ++i)
    require_finite(samples[i].reward, "designer_advantages: the reward of sample " + std::to_string(i) + " (skill '" +
                                          samples[i].skill + "')");
  if (!std::isfinite(scale)) throw spade::Error("designer_advantages: scale must be finite, got " + std::to_string(scale));
  std::map<std::string, std::pair<double, int64_t>> sums;  // skill -> (sum, count)
  for (const auto& s : samples) {
    auto& e = sums[s.skill];
    e.first += s.reward;
    e.second += 1;
  }
  std::vector<double> out;
  out.reserve(samples.size());
  for (const auto& s : samples) {
    const auto& e = sums[s.skill];
    const double mean = e.first / static_cast<double>(e.second);
    out.push_back((s.reward - mean) * scale);
  }
  return out;
}

}  // namespace spade::reward
