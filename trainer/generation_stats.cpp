#include "trainer/generation_stats.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include "common/code_ngrams.h"
#include "common/vendi.h"
#include "trainer/formula_text.h"

namespace spade::trainer {

namespace {

// Distinct levels of the sorted values that satisfy `keep`.
int count_levels(std::vector<double> rewards, bool (*keep)(double)) {
  std::sort(rewards.begin(), rewards.end());
  int levels = 0;
  double last = 0;
  for (double r : rewards) {
    if (!keep(r)) continue;
    if (levels == 0 || r - last > kRewardLevelTolerance) ++levels;
    last = r;
  }
  return levels;
}

std::optional<double> mean_of(const std::vector<double>& v) {
  if (v.empty()) return std::nullopt;
  double s = 0;
  for (double x : v) s += x;
  return s / static_cast<double>(v.size());
}

}  // namespace

std::vector<const LiveEnv*> measured_environments(const std::vector<LiveEnv>& live, bool fixed_pool) {
  std::vector<const LiveEnv*> out;
  for (const LiveEnv& env : live)
    if (fixed_pool || !env.from_seed) out.push_back(&env);
  return out;
}

std::optional<double> program_vendi_score(const std::vector<std::string>& programs) {
  if (programs.empty()) return std::nullopt;
  return vendi_score(code_similarity_matrix(programs), static_cast<int>(programs.size()));
}

int distinct_reward_levels(const std::vector<double>& rewards) {
  return count_levels(rewards, [](double) { return true; });
}

int partial_reward_levels(const std::vector<double>& rewards) {
  return count_levels(rewards, [](double r) { return r > 0 && r < 1; });
}

std::optional<double> formula_share(const std::vector<const LiveEnv*>& envs, const std::vector<FirstObservation>& plays) {
  if (envs.empty()) return std::nullopt;
  std::set<std::string> giveaway;
  for (const FirstObservation& p : plays)
    if (!giveaway.count(p.env_id) && states_formula(p.text)) giveaway.insert(p.env_id);
  int n = 0;
  for (const LiveEnv* env : envs) n += giveaway.count(env->id) > 0;
  return static_cast<double>(n) / static_cast<double>(envs.size());
}

void describe_generation(const std::vector<LiveEnv>& live, bool fixed_pool, const std::vector<FirstObservation>& plays,
                         GenerationRecord& g) {
  const std::vector<const LiveEnv*> envs = measured_environments(live, fixed_pool);
  std::vector<std::string> programs;
  for (const LiveEnv* env : envs) programs.push_back(env->code);
  g.vendi_score = program_vendi_score(programs);
  g.vendi_envs = static_cast<int64_t>(programs.size());
  g.formula_in_first_obs = formula_share(envs, plays);
}

GenerationCloseRecord close_generation(const std::vector<LiveEnv>& live, bool fixed_pool, int64_t step) {
  GenerationCloseRecord out;
  std::vector<double> levels, partial;
  for (const LiveEnv* env : measured_environments(live, fixed_pool)) {
    levels.push_back(distinct_reward_levels(env->window_rewards));
    partial.push_back(partial_reward_levels(env->window_rewards));
  }
  out.reward_levels = mean_of(levels);
  out.partial_reward_levels = mean_of(partial);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (const LiveEnv& env : live) {
    EnvironmentRow row{env.id, env.skill, env.code, env.hint, env.born, env.from_seed};
    row.closed = step;
    row.window_plays = static_cast<int64_t>(env.window_rewards.size());
    int64_t wins = 0;
    for (double r : env.window_rewards) wins += r > 0;
    row.win_rate = row.window_plays ? static_cast<double>(wins) / static_cast<double>(row.window_plays) : nan;
    row.regret = fixed_pool ? nan : env.regret;
    out.environments.push_back(std::move(row));
  }
  return out;
}

}  // namespace spade::trainer
