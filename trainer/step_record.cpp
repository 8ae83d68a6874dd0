#include "trainer/step_record.h"

#include <algorithm>
#include <cstdio>

namespace spade::trainer {

namespace {

double d(int64_t n) { return static_cast<double>(n); }

void add_generation(const GenerationRecord& g, std::map<std::string, double>& m) {
  m["designer/attempts"] = d(g.attempts);
  m["designer/admitted"] = d(g.admitted);
  // How many admitted programs are verbatim copies of a seed program (a small policy fresh from the
  // cold start reproduces its targets; novelty is what designer training should raise).
  m["designer/seed_copy_rate"] = g.seed_copy_rate;
  m["envs/from_seeds"] = d(g.from_seeds);
  for (const auto& [reason, n] : g.rejected_by_reason) m["designer/rejected_by_reason/" + reason] = d(n);
  // The tool-use self-validator (SPADE App. F.2): admitted (yes), rejected (no), failed open (no verdict).
  for (const auto& [verdict, n] : g.self_validation) m["designer/self_validator/" + verdict] = d(n);
  m["designer/hint_reward"] = g.hint_reward;
  m["time/regen_s"] = g.regen_s;
  // Diversity of the new generation (SPADE §6.2, Fig. 8: Vendi and Vendi / n) and the share whose
  // first observation gives the rule away (App. I, Fig. 9); trainer/generation_stats.h.
  if (g.vendi_score) {
    m["designer/vendi_score"] = *g.vendi_score;
    m["designer/vendi_score_per_env"] = *g.vendi_score / d(std::max<int64_t>(1, g.vendi_envs));
  }
  if (g.formula_in_first_obs) m["designer/formula_in_first_obs"] = *g.formula_in_first_obs;
}

// A generation whose window closed: how graded its rewards were (SPADE App. I.1.1).
void add_close(const GenerationCloseRecord& c, std::map<std::string, double>& m) {
  if (c.reward_levels) m["designer/reward_levels"] = *c.reward_levels;
  if (c.partial_reward_levels) m["designer/partial_reward_levels"] = *c.partial_reward_levels;
}

void add_update(const StepRecord& r, std::map<std::string, double>& m) {
  const UpdateStats& u = r.update;
  m["actor/lr"] = r.lr;
  m["actor/pg_loss"] = u.pg_loss;
  m["actor/pg_clipfrac"] = u.pg_clipfrac;
  m["actor/pg_clipfrac_lower"] = u.pg_clipfrac_lower;  // dual clip active (verl's name; 0 without it)
  m["actor/optimizer_steps"] = d(u.num_optimizer_steps);  // optim.mini_batches, less empty ones
  m["actor/ppo_kl"] = u.ppo_kl;
  m["actor/entropy"] = u.entropy;
  if (r.log_kl) m["actor/kl_loss"] = u.kl;  // verl's name; before kl_coef
  m["actor/grad_norm"] = u.grad_norm;
  m["train/tis"] = u.tis_mean;
  m["train/tis_clipfrac"] = u.tis_clipfrac;
  m["train/rollout_logp_abs_diff"] = u.rollout_logp_abs_diff;
  m["train/tokens"] = d(u.num_tokens);
  m["batch/designer_samples"] = d(r.designer_samples);
}

void add_perf(const StepRecord& r, std::map<std::string, double>& m) {
  const double regen_tokens = r.generation ? d(r.generation->regen_tokens) : 0.0;
  m["rollout/regen_tokens"] = regen_tokens;
  // Sampled tokens per second of rollout (designer, hint and agent generation + environment steps).
  m["perf/tokens_per_s"] = (d(r.agent_tokens) + regen_tokens) / std::max(1e-9, r.rollout_s);
  m["time/rollout_s"] = r.rollout_s;
  m["time/update_s"] = r.update.seconds;
  m["perf/train_tokens_per_s"] = r.update.seconds > 0 ? d(r.update.num_tokens) / r.update.seconds : 0.0;
  if (r.mfu) m["perf/mfu"] = *r.mfu;  // this rank's update (trainer/step_bench.h)
  m["time/rollouts_h5_s"] = r.rollouts_h5_s;
  m["perf/max_rss_gb"] = r.max_rss_gb;
  if (r.gpu_max_allocated_gb) m["perf/max_memory_allocated_gb"] = *r.gpu_max_allocated_gb;  // verl's names
  if (r.gpu_max_reserved_gb) m["perf/max_memory_reserved_gb"] = *r.gpu_max_reserved_gb;
  m["time/step_s"] = r.step_s;
}

}  // namespace

std::map<std::string, double> step_metrics(const StepRecord& r) {
  std::map<std::string, double> m;
  if (r.generation) add_generation(*r.generation, m);
  // The trained designer reward of a scoring at this step (the last one when the closing generation
  // and the final flush both score), else the live generation's window-to-date estimate.
  m["designer/blend"] = r.window_blend;
  for (const DesignerScoringRecord& s : r.designer_scorings) {
    for (const auto& [skill, gap] : s.lp_gap) m["designer/lp_gap/" + skill] = gap;
    m["designer/blend"] = s.blend;
    m["designer/scale"] = s.scale;
    m["designer/scored_samples"] = d(s.scored_samples);
    m["designer/trained_samples"] = d(s.trained_samples);
  }
  for (const GenerationCloseRecord& c : r.closed_generations) add_close(c, m);  // the last one's values stay
  m["designer/valid_rate"] = r.valid_rate;
  m["designer/regret"] = r.regret;
  add_update(r, m);
  m["batch/agent_samples"] = d(r.agent_samples);    // agent plays in the optimizer batch
  m["batch/agent_filtered"] = d(r.agent_filtered);  // left out by the reward.* filters
  // TRL's frac_reward_zero_std (trainer-anchors §3) under our reward/ prefix: the share of this step's
  // environments (groups) whose plays all got the same reward, logged whether or not they are filtered.
  m["reward/frac_reward_zero_std"] = r.frac_zero_std;
  // Share of agent plays truncated (turn cap, context budget, response without EOS: rollout/episode.h);
  // verl's response_length/clip_ratio counts only the length cap.
  m["episode/truncated_frac"] = r.truncated_frac;
  // designer/learnable_share (docs/design.md; SPADE paper Fig. 8): designed environments (seed fill-ins
  // excluded) whose no-hint plays of this step were won 20% to 80% of the time.
  m["designer/learnable_share"] = r.learnable_share;
  m["reward/mean"] = r.reward_mean;
  m["reward/success_rate"] = r.success_rate;
  m["episode/turns_mean"] = r.turns_mean;
  if (r.tool_calls) {  // tool-use episodes: calls that reached the environments (rollout/episode.h)
    m["agent/tool_calls_per_play"] = r.tool_calls->calls_per_play;
    m["agent/plays_with_tool_calls"] = r.tool_calls->plays_with_calls;
    m["agent/malformed_tool_call_share"] = r.tool_calls->malformed_share;
    if (r.tool_calls->hinted_calls_per_play) m["hint/tool_calls_per_play"] = *r.tool_calls->hinted_calls_per_play;
  }
  m["envs/live"] = d(r.live_envs);
  add_perf(r, m);
  m.insert(r.eval.begin(), r.eval.end());
  return m;
}

std::string console_line(const StepRecord& r, int steps, bool fixed_pool) {
  const std::map<std::string, double> m = step_metrics(r);
  char envs[96];
  if (fixed_pool)
    std::snprintf(envs, sizeof envs, "envs %d from the pool", static_cast<int>(r.live_envs));
  else
    std::snprintf(envs, sizeof envs, "envs %d valid %.2f | regret %+.3f | blend %.3f", static_cast<int>(r.live_envs),
                  r.valid_rate, r.regret, m.at("designer/blend"));
  char line[320];
  std::snprintf(line, sizeof line,
                "step %3lld/%d | reward %.3f | %s | grad_norm %.3f | entropy %.3f | tis %.3f | %5.0f tok/s | %.1f s",
                static_cast<long long>(r.step), steps, r.reward_mean, envs, r.update.grad_norm, r.update.entropy,
                r.update.tis_mean, m.at("perf/tokens_per_s"), r.step_s);
  return line;
}

}  // namespace spade::trainer
