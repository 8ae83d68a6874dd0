#include "trainer/selfplay_bookkeeping.h"

#include <algorithm>

#include "common/error.h"
#include "reward/advantages.h"

namespace spade::trainer {

namespace {

double mean(const std::vector<double>& v) { return reward::mean_or_zero(v); }

void check_groups(size_t plays, size_t envs, int plays_per_env, const char* what) {
  if (plays_per_env < 1 || plays != envs * static_cast<size_t>(plays_per_env))
    throw Error(std::string(what) + ": " + std::to_string(plays) + " plays for " + std::to_string(envs) +
                " environments x " + std::to_string(plays_per_env) + " plays each");
}

}  // namespace

AgentScores score_agent_plays(const std::vector<PlayOutcome>& plays, const std::vector<LiveEnv>& live,
                              int plays_per_env, const AgentScoring& options) {
  check_groups(plays.size(), live.size(), plays_per_env, "score_agent_plays");
  AgentScores s;
  std::vector<std::string> groups;
  std::vector<bool> truncated;
  std::vector<int64_t> env_wins(live.size(), 0);
  for (size_t i = 0; i < plays.size(); ++i) {
    const PlayOutcome& p = plays[i];
    s.rewards.push_back(p.reward);
    groups.push_back(p.env_id);
    truncated.push_back(p.truncated);
    s.turns += p.turns;
    s.successes += p.reward > 0;
    s.sampled_tokens += p.sampled_tokens;
    env_wins[i / plays_per_env] += p.reward > 0;
  }
  s.advantages = reward::actor_advantages(s.rewards, groups, options.std_eps, options.scale_by_std);
  s.filter = filter_agent_plays(s.rewards, groups, truncated, options.filters);
  std::vector<double> rates;  // designed environments only (seed fill-ins excluded)
  for (size_t e = 0; e < live.size(); ++e)
    if (!live[e].from_seed) rates.push_back(static_cast<double>(env_wins[e]) / plays_per_env);
  s.learnable_share = learnable_share(rates);
  s.reward_mean = mean(s.rewards);
  s.success_rate = s.rewards.empty() ? 0.0 : static_cast<double>(s.successes) / s.rewards.size();
  s.turns_mean = plays.empty() ? 0.0 : static_cast<double>(s.turns) / plays.size();
  return s;
}

void record_window(std::vector<LiveEnv>& live, const std::vector<PlayOutcome>& plays, int plays_per_env,
                   bool regeneration, SelfPlaySummary& summary) {
  check_groups(plays.size(), live.size(), plays_per_env, "record_window");
  for (size_t i = 0; i < plays.size(); ++i) {
    const PlayOutcome& p = plays[i];
    LiveEnv& env = live[i / plays_per_env];
    env.window_rewards.push_back(p.reward);
    if (p.step_timeout) env.step_timeout = true;
    if (!regeneration) continue;
    env.r_nohint += p.reward / plays_per_env;
    summary.nohint_success_sum += p.reward > 0;
    ++summary.nohint_plays;
  }
}

double record_hinted(std::vector<LiveEnv>& live, const std::vector<PlayOutcome>& hinted, SelfPlaySummary& summary) {
  std::map<std::string, std::vector<double>> by_env;
  for (const PlayOutcome& p : hinted) {
    by_env[p.env_id].push_back(p.reward);
    summary.hint_success_sum += p.reward > 0;
    ++summary.hint_plays;
  }
  std::vector<double> r_hints;
  for (LiveEnv& env : live) {
    env.r_hint = mean(by_env[env.id]);
    r_hints.push_back(env.r_hint);
  }
  return mean(r_hints);
}

double close_regret(std::vector<LiveEnv>& live, EnvMemory& memory, int64_t step) {
  for (LiveEnv& env : live) {
    env.regret = reward::hint_regret({env.r_hint}, {env.r_nohint}, !env.hint.empty()).regret;
    if (env.from_seed) continue;  // memory holds designed environments only
    double wins = 0;
    for (double r : env.window_rewards) wins += r > 0;
    memory.add({env.path, env.skill, env.code, wins / std::max<size_t>(1, env.window_rewards.size()), env.regret,
                step});
  }
  return mean_regret(live);
}

double mean_regret(const std::vector<LiveEnv>& live) {
  std::vector<double> regrets;
  for (const LiveEnv& env : live) regrets.push_back(env.regret);
  return mean(regrets);
}

double window_blend(const std::vector<LiveEnv>& live, const reward::BlendConfig& blend) {
  std::vector<double> blends;
  for (const LiveEnv& env : live) blends.push_back(reward::blend_reward(env.regret, mean(env.window_rewards), blend));
  return mean(blends);
}

DesignerScores score_designer_samples(const std::vector<DesignerSampleKey>& samples, const std::vector<LiveEnv>& live,
                                      reward::LearningPotentialTracker& ema, const DesignerScoring& options) {
  DesignerScores out;
  std::vector<reward::DesignerSample> ds;
  for (const DesignerSampleKey& s : samples) {
    const LiveEnv* env = nullptr;
    for (const LiveEnv& e : live)
      if (e.id == s.env_id) env = &e;
    reward::DesignerWindowStats w;
    if (env) {
      w.r_hint = env->r_hint;
      w.r_nohint = env->r_nohint;
      w.window_rewards = env->window_rewards;
      w.step_timeout = env->step_timeout;
    }
    w.skill_mu_slow = ema.baseline(s.skill);
    const double r = reward::designer_raw_reward(w, options.reward);
    ds.push_back({s.skill, r});
    out.rewards.push_back(r);
  }
  std::vector<std::pair<std::string, double>> env_means;  // one EMA step per skill per round (Sec. 7.2)
  for (const LiveEnv& env : live) env_means.emplace_back(env.skill, mean(env.window_rewards));
  ema.update_round(env_means);
  for (const auto& [skill, e] : ema.skills()) out.lp_gap[skill] = e.learning_potential();
  const int64_t n_actor = static_cast<int64_t>(live.size()) * options.plays_per_env;
  out.scale = reward::designer_reward_scale(n_actor, static_cast<int64_t>(ds.size()), options.k, options.scale_cap);
  out.advantages = reward::designer_advantages(ds, out.scale);
  out.blend_mean = mean(out.rewards);
  return out;
}

}  // namespace spade::trainer
