// The self-play step's reward bookkeeping (trainer/selfplay_bookkeeping.h) on canned play outcomes:
// no sandbox, no model, no cold start. Every expected value is worked out by hand in the comments
// from the formulas the header cites (reward/advantages.h, reward/designer_reward.h,
// reward/learning_potential.h, trainer/batch_filters.h).
#include <gtest/gtest.h>

#include <cmath>

#include "common/error.h"
#include "trainer/selfplay_bookkeeping.h"

using namespace spade;
using namespace spade::trainer;

namespace {

LiveEnv env(const std::string& id, const std::string& skill, bool from_seed = false) {
  LiveEnv e;
  e.id = id;
  e.skill = skill;
  e.path = "envs/" + id + ".py";
  e.code = "code of " + id;
  e.from_seed = from_seed;
  return e;
}

PlayOutcome play(const std::string& id, double reward, int turns = 1, bool truncated = false, int64_t tokens = 0,
                 bool timeout = false) {
  PlayOutcome p;
  p.env_id = id;
  p.reward = reward;
  p.turns = turns;
  p.truncated = truncated;
  p.sampled_tokens = tokens;
  p.step_timeout = timeout;
  return p;
}

}  // namespace

// Two environments x 2 plays: A (designed) rewards 1, -1 (the second truncated); B (a seed fill-in)
// rewards 0.5, 0.5.
TEST(SelfPlayBookkeeping, AgentPlaysScoredFilteredAndCounted) {
  const std::vector<LiveEnv> live = {env("A", "math"), env("B", "logic", /*from_seed=*/true)};
  const std::vector<PlayOutcome> plays = {play("A", 1, 2, false, 5), play("A", -1, 1, true, 3), play("B", 0.5, 2, false, 4),
                                          play("B", 0.5, 2, false, 4)};
  AgentScoring opt;
  opt.scale_by_std = false;  // Dr.GRPO: r - group mean. A: mean 0 -> 1, -1; B: mean 0.5 -> 0, 0
  opt.filters = {/*filter_zero_std_groups=*/true, /*mask_truncated=*/true};
  const AgentScores s = score_agent_plays(plays, live, 2, opt);
  EXPECT_EQ(s.rewards, (std::vector<double>{1, -1, 0.5, 0.5}));
  EXPECT_EQ(s.advantages, (std::vector<double>{1, -1, 0, 0}));
  // B is zero-std (both plays dropped), A's second play is truncated (dropped): only play 0 trains.
  EXPECT_EQ(s.filter.keep, (std::vector<bool>{true, false, false, false}));
  EXPECT_EQ(s.filter.dropped, 3);
  EXPECT_EQ(s.filter.frac_zero_std(), 0.5);    // 1 of 2 groups
  EXPECT_EQ(s.filter.truncated_frac(), 0.25);  // 1 of 4 plays
  EXPECT_EQ(s.turns, 7);                        // 2 + 1 + 2 + 2
  EXPECT_EQ(s.successes, 3);                    // 1, 0.5, 0.5 are > 0
  EXPECT_EQ(s.sampled_tokens, 16);              // 5 + 3 + 4 + 4
  EXPECT_EQ(s.reward_mean, 0.25);               // (1 - 1 + 0.5 + 0.5) / 4
  EXPECT_EQ(s.success_rate, 0.75);              // 3 / 4
  EXPECT_EQ(s.turns_mean, 1.75);                // 7 / 4
  // Learnable share over designed environments only: A won 1 of 2 = 0.5, inside [0.2, 0.8] -> 1.
  EXPECT_EQ(s.learnable_share, 1.0);
  // Were B designed, its 2 of 2 = 1.0 would be outside the band: 1 of 2 environments -> 0.5.
  std::vector<LiveEnv> designed = live;
  designed[1].from_seed = false;
  EXPECT_EQ(score_agent_plays(plays, designed, 2, opt).learnable_share, 0.5);
  // Standard z-scores (reward::group_advantages: Bessel-corrected std): A's rewards 1, -1 have mean 0
  // and std sqrt((1 + 1) / (2 - 1)) = sqrt(2), so its first advantage is 1 / (sqrt(2) + eps).
  opt.scale_by_std = true;
  opt.std_eps = 1e-6;
  EXPECT_DOUBLE_EQ(score_agent_plays(plays, live, 2, opt).advantages[0], 1 / (std::sqrt(2.0) + 1e-6));
}

TEST(SelfPlayBookkeeping, PlaysNotInWholeGroupsAreRefused) {
  const std::vector<LiveEnv> live = {env("A", "math")};
  SelfPlaySummary summary;
  std::vector<LiveEnv> windows = live;
  EXPECT_THROW(score_agent_plays({play("A", 1)}, live, 2, {}), Error);
  EXPECT_THROW(record_window(windows, {play("A", 1)}, 2, false, summary), Error);
}

// A carries one earlier window reward (0); this step A plays 1 and 0 (the second's step() timed out),
// B plays -1 and 1.
TEST(SelfPlayBookkeeping, WindowRewardsAndRegenerationNoHintReturns) {
  std::vector<LiveEnv> live = {env("A", "math"), env("B", "logic")};
  live[0].window_rewards = {0};
  const std::vector<PlayOutcome> plays = {play("A", 1), play("A", 0, 1, false, 0, /*timeout=*/true), play("B", -1),
                                          play("B", 1)};
  SelfPlaySummary summary;
  std::vector<LiveEnv> later = live;
  record_window(live, plays, 2, /*regeneration=*/true, summary);
  EXPECT_EQ(live[0].window_rewards, (std::vector<double>{0, 1, 0}));
  EXPECT_EQ(live[1].window_rewards, (std::vector<double>{-1, 1}));
  EXPECT_TRUE(live[0].step_timeout);
  EXPECT_FALSE(live[1].step_timeout);
  EXPECT_EQ(live[0].r_nohint, 0.5);  // 1/2 + 0/2
  EXPECT_EQ(live[1].r_nohint, 0.0);  // -1/2 + 1/2
  EXPECT_EQ(summary.nohint_success_sum, 2);  // A's 1 and B's 1
  EXPECT_EQ(summary.nohint_plays, 4);
  // Between regenerations only the windows grow: r_nohint and the summary stay.
  SelfPlaySummary untouched;
  record_window(later, plays, 2, /*regeneration=*/false, untouched);
  EXPECT_EQ(later[0].window_rewards, (std::vector<double>{0, 1, 0}));
  EXPECT_EQ(later[0].r_nohint, 0.0);
  EXPECT_EQ(untouched.nohint_plays, 0);
}

// A's hint was played twice (rewards 1, 0); B's hint failed (""), so B has no hinted play.
TEST(SelfPlayBookkeeping, HintedPlaysSetRHint) {
  std::vector<LiveEnv> live = {env("A", "math"), env("B", "logic")};
  live[0].hint = "h";
  SelfPlaySummary summary;
  const double mean = record_hinted(live, {play("A", 1), play("A", 0)}, summary);
  EXPECT_EQ(live[0].r_hint, 0.5);  // (1 + 0) / 2
  EXPECT_EQ(live[1].r_hint, 0.0);  // no play: 0
  EXPECT_EQ(mean, 0.25);           // (0.5 + 0) / 2
  EXPECT_EQ(summary.hint_success_sum, 1);
  EXPECT_EQ(summary.hint_plays, 2);
}

// Regret = r_hint - r_nohint, with a failed hint counting as r_hint = 0 (reward::hint_regret).
TEST(SelfPlayBookkeeping, RegretAndMemoryRecordsOfDesignedEnvironments) {
  std::vector<LiveEnv> live = {env("A", "math"), env("B", "logic"), env("C", "math", /*from_seed=*/true)};
  live[0].hint = "h";
  live[0].r_hint = 0.5;
  live[0].r_nohint = 0.25;
  live[0].window_rewards = {1, 0, -1, 1};
  live[1].r_hint = 0.75;  // hint "" (failed): ignored
  live[1].r_nohint = 0.5;
  live[2].hint = "h";
  live[2].r_hint = 1;
  EnvMemory memory(10, 0.15, 0.85);
  const double mean = close_regret(live, memory, /*step=*/7);
  EXPECT_EQ(live[0].regret, 0.25);   // 0.5 - 0.25
  EXPECT_EQ(live[1].regret, -0.5);   // 0 - 0.5
  EXPECT_EQ(live[2].regret, 1.0);    // 1 - 0
  EXPECT_EQ(mean, 0.25);             // (0.25 - 0.5 + 1) / 3
  EXPECT_EQ(mean_regret(live), 0.25);
  // Memory: the designed environments A and B (C is a seed fill-in), in live order.
  ASSERT_EQ(memory.records().size(), 2u);
  const MemoryRecord& a = memory.records()[0];
  EXPECT_EQ(a.path, "envs/A.py");
  EXPECT_EQ(a.skill, "math");
  EXPECT_EQ(a.code, "code of A");
  EXPECT_EQ(a.win_rate, 0.5);  // 2 of 4 window rewards > 0
  EXPECT_EQ(a.regret, 0.25);
  EXPECT_EQ(a.rollout_id, 7);
  EXPECT_EQ(memory.records()[1].win_rate, 0.0);  // empty window: 0 / max(1, 0)
  EXPECT_EQ(memory.records()[1].regret, -0.5);
  EXPECT_EQ(mean_regret({}), 0.0);
}

// Default blend: 0.4 * clip(regret / 0.15, 0, 1) + 0.6 * plateau(w), plateau 1 on [0.4, 0.6], ramp 0.25.
TEST(SelfPlayBookkeeping, WindowBlendEstimate) {
  std::vector<LiveEnv> live = {env("X", "math"), env("Y", "math")};
  live[0].regret = 0;  // w = 0.5: 0.4 * 0 + 0.6 * 1 = 0.6
  live[0].window_rewards = {1, 0};
  live[1].regret = 0.3;  // regret clipped to 1, w = 0 (empty): plateau 1 - 0.4 / 0.25 < 0 -> 0: 0.4
  EXPECT_DOUBLE_EQ(window_blend(live, {}), 0.5);  // (0.6 + 0.4) / 2
  EXPECT_EQ(window_blend({}, {}), 0.0);
}

// RegretBased rewards: max(0, r_hint - r_nohint), -0.5 when step() timed out. Skills math (E1, E2) and
// logic (E3 and a sample whose environment is gone: all-zero statistics).
TEST(SelfPlayBookkeeping, DesignerSamplesScoredCentredPerSkillAndScaled) {
  std::vector<LiveEnv> live = {env("E1", "math"), env("E2", "math"), env("E3", "logic")};
  live[0].r_hint = 0.75, live[0].r_nohint = 0.25, live[0].window_rewards = {1, 0};  // reward 0.5, mean 0.5
  live[1].r_hint = 0, live[1].r_nohint = 0.5, live[1].window_rewards = {1, 1};      // timed out: -0.5, mean 1
  live[1].step_timeout = true;
  live[2].r_hint = 1, live[2].r_nohint = 0, live[2].window_rewards = {0, 0};        // reward 1, mean 0
  reward::LearningPotentialTracker ema({/*gamma_fast=*/0.5, /*gamma_slow=*/0.25});
  ema.at("math").restore(0.5, 0.5);
  DesignerScoring opt;
  opt.reward.variant = reward::DesignerReward::RegretBased;
  opt.plays_per_env = 2;
  opt.k = 2;
  opt.scale_cap = 50;
  const DesignerScores s =
      score_designer_samples({{"E1", "math"}, {"E2", "math"}, {"E3", "logic"}, {"gone", "logic"}}, live, ema, opt);
  EXPECT_EQ(s.rewards, (std::vector<double>{0.5, -0.5, 1, 0}));
  EXPECT_EQ(s.blend_mean, 0.25);  // (0.5 - 0.5 + 1 + 0) / 4
  // S = min(n_actor / n_env * k, cap) = min(3 * 2 / 4 * 2, 50) = 3. Centred per skill: math mean 0
  // -> 0.5, -0.5; logic mean 0.5 -> 0.5, -0.5; times 3.
  EXPECT_EQ(s.scale, 3.0);
  EXPECT_EQ(s.advantages, (std::vector<double>{1.5, -1.5, 1.5, -1.5}));
  // One EMA step per skill: math folds in (0.5 + 1) / 2 = 0.75: fast 0.5*0.5 + 0.5*0.75 = 0.625, slow
  // 0.75*0.5 + 0.25*0.75 = 0.5625, gap |0.0625| / (2 * 0.25) = 0.125. logic's first value 0: gap 0.
  EXPECT_EQ(s.lp_gap.at("math"), 0.125);
  EXPECT_EQ(s.lp_gap.at("logic"), 0.0);
  EXPECT_EQ(ema.find("math")->mu_slow(), 0.5625);
}

// The learning-potential variant's baseline is the skill's slow EMA BEFORE this round's update.
TEST(SelfPlayBookkeeping, LearningPotentialBaselineIsTheSlowEmaBeforeTheRound) {
  std::vector<LiveEnv> live = {env("E1", "math")};
  live[0].window_rewards = {1, 0};  // mean 0.5
  reward::LearningPotentialTracker ema({0.5, 0.25});
  ema.at("math").restore(0.5, 0.25);
  DesignerScoring opt;
  opt.reward.variant = reward::DesignerReward::LearningPotential;
  const DesignerScores s = score_designer_samples({{"E1", "math"}}, live, ema, opt);
  // |0.5 - 0.25| = 0.25 (after the round slow would be 0.75*0.25 + 0.25*0.5 = 0.3125, giving 0.1875).
  EXPECT_EQ(s.rewards, (std::vector<double>{0.25}));
  EXPECT_EQ(s.advantages, (std::vector<double>{0.0}));  // a skill of one sample centres to 0
  EXPECT_EQ(ema.find("math")->mu_slow(), 0.3125);
}
