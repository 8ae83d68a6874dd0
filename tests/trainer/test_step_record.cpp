// The step record's metrics line and console line (trainer/step_record.h) on hand-made records: which
// keys appear on which steps, the last designer scoring (and closed generation) winning, and the
// derived throughput values (worked out in the comments).
#include <gtest/gtest.h>

#include "trainer/step_record.h"

using namespace spade::trainer;

namespace {

StepRecord regeneration_record() {
  StepRecord r;
  r.step = 3;
  GenerationRecord g;
  g.attempts = 3;
  g.admitted = 1;
  g.seed_copy_rate = 1;
  g.from_seeds = 1;
  g.rejected_by_reason = {{"syntax", 2}};
  g.hint_reward = 0.5;
  g.regen_tokens = 40;
  g.regen_s = 2;
  g.vendi_score = 1.5;
  g.vendi_envs = 3;
  g.formula_in_first_obs = 0.25;
  r.generation = g;
  GenerationCloseRecord closing, last;  // the generation closing at this regeneration, then the new one at the last step
  closing.reward_levels = 2.5;
  closing.partial_reward_levels = 1;
  last.reward_levels = 1.5;
  last.partial_reward_levels = 0.5;
  r.closed_generations = {closing, last};
  r.designer_scorings.push_back({0.1, 2, 3, 3, {{"math", 0.2}}});                // the closing generation
  r.designer_scorings.push_back({0.3, 4, 2, 1, {{"math", 0.25}, {"logic", 0.5}}});  // the last step's flush
  r.window_blend = 0.9;
  r.valid_rate = 0.5;
  r.regret = 0.125;
  r.live_envs = 2;
  r.reward_mean = 0.25;
  r.agent_tokens = 60;
  r.rollout_s = 4;
  r.update.num_tokens = 10;
  r.update.seconds = 2;
  r.update.grad_norm = 1.5;
  r.update.entropy = 2.25;
  r.update.tis_mean = 1;
  r.step_s = 6;
  return r;
}

}  // namespace

TEST(StepRecord, RegenerationStepKeysAndTheLastDesignerScoring) {
  const std::map<std::string, double> m = step_metrics(regeneration_record());
  EXPECT_EQ(m.at("designer/attempts"), 3);
  EXPECT_EQ(m.at("designer/admitted"), 1);
  EXPECT_EQ(m.at("envs/from_seeds"), 1);
  EXPECT_EQ(m.at("designer/rejected_by_reason/syntax"), 2);
  EXPECT_EQ(m.at("designer/hint_reward"), 0.5);
  EXPECT_EQ(m.at("time/regen_s"), 2);
  EXPECT_EQ(m.at("rollout/regen_tokens"), 40);
  // Two scorings at this step: the flush (second) is what is logged; lp_gap keys of both, the later wins.
  EXPECT_EQ(m.at("designer/blend"), 0.3);
  EXPECT_EQ(m.at("designer/scale"), 4);
  EXPECT_EQ(m.at("designer/scored_samples"), 2);
  EXPECT_EQ(m.at("designer/trained_samples"), 1);
  EXPECT_EQ(m.at("designer/lp_gap/math"), 0.25);
  EXPECT_EQ(m.at("designer/lp_gap/logic"), 0.5);
  EXPECT_EQ(m.at("perf/tokens_per_s"), 25);       // (60 agent + 40 regeneration tokens) / 4 s
  EXPECT_EQ(m.at("perf/train_tokens_per_s"), 5);  // 10 tokens / 2 s
  EXPECT_EQ(m.at("envs/live"), 2);
  // The new generation's diversity: Vendi 1.5 over 3 programs is 0.5 per environment.
  EXPECT_EQ(m.at("designer/vendi_score"), 1.5);
  EXPECT_EQ(m.at("designer/vendi_score_per_env"), 0.5);
  EXPECT_EQ(m.at("designer/formula_in_first_obs"), 0.25);
  // Two generations closed at this step: the later (the last step's) levels are logged.
  EXPECT_EQ(m.at("designer/reward_levels"), 1.5);
  EXPECT_EQ(m.at("designer/partial_reward_levels"), 0.5);
  // Optional keys absent: no KL reference, no peak_tflops, no GPU.
  for (const char* key : {"actor/kl_loss", "perf/mfu", "perf/max_memory_allocated_gb", "step"})
    EXPECT_EQ(m.count(key), 0u) << key;
}

TEST(StepRecord, PlainStepLogsTheWindowEstimateAndNoRegenerationKeys) {
  StepRecord r = regeneration_record();
  r.generation.reset();
  r.designer_scorings.clear();
  r.closed_generations.clear();
  r.log_kl = true;
  r.update.kl = 0.75;
  r.mfu = 0.125;
  const std::map<std::string, double> m = step_metrics(r);
  EXPECT_EQ(m.at("designer/blend"), 0.9);  // the window-to-date estimate
  EXPECT_EQ(m.at("rollout/regen_tokens"), 0);
  EXPECT_EQ(m.at("perf/tokens_per_s"), 15);  // 60 / 4
  EXPECT_EQ(m.at("actor/kl_loss"), 0.75);
  EXPECT_EQ(m.at("perf/mfu"), 0.125);
  for (const char* key : {"designer/attempts", "designer/hint_reward", "time/regen_s", "designer/scale",
                          "designer/trained_samples", "designer/lp_gap/math", "designer/vendi_score",
                          "designer/vendi_score_per_env", "designer/formula_in_first_obs", "designer/reward_levels",
                          "designer/partial_reward_levels"})
    EXPECT_EQ(m.count(key), 0u) << key;
}

TEST(StepRecord, ConsoleLine) {
  EXPECT_EQ(console_line(regeneration_record(), 10, false),
            "step   3/10 | reward 0.250 | envs 2 valid 0.50 | regret +0.125 | blend 0.300 | grad_norm 1.500 | "
            "entropy 2.250 | tis 1.000 |    25 tok/s | 6.0 s");
  // A fixed pool has no designer: no valid rate, regret or blend to show.
  EXPECT_EQ(console_line(regeneration_record(), 10, true),
            "step   3/10 | reward 0.250 | envs 2 from the pool | grad_norm 1.500 | entropy 2.250 | tis 1.000 |    25 "
            "tok/s | 6.0 s");
}
