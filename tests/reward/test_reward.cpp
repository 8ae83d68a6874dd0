// Tests for reward/: numbers computed independently (by hand or with Python's statistics module),
// each with its source in a comment.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "common/error.h"
#include "reward/advantages.h"
#include "reward/designer_reward.h"
#include "reward/learning_potential.h"

using namespace spade::reward;

namespace {
void expect_all_near(const std::vector<double>& got, const std::vector<double>& want, double tol) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tol) << "index " << i;
}
}  // namespace

// ---------------------------------------------------------------- episode reward (reference §3)

TEST(EpisodeReward, ClampedWhenTerminatedElseZero) {
  EXPECT_DOUBLE_EQ(episode_reward(true, 1.0), 1.0);
  EXPECT_DOUBLE_EQ(episode_reward(true, 0.3), 0.3);
  EXPECT_DOUBLE_EQ(episode_reward(true, 7.0), 1.0);
  EXPECT_DOUBLE_EQ(episode_reward(true, -3.0), -1.0);
  EXPECT_DOUBLE_EQ(episode_reward(false, 1.0), 0.0);   // truncated: no reward
  EXPECT_DOUBLE_EQ(episode_reward(false, -1.0), 0.0);
}

// ---------------------------------------------------------------- group advantages (trainer-anchors §1, §4)

TEST(GroupAdvantages, BesselStdEps1e6) {
  // trainer-anchors §4: [1,0,0,1], mean 0.5, unbiased std sqrt(1/3); eps 1e-6 -> +-0.8660239.
  expect_all_near(group_advantages({1, 0, 0, 1}, 1e-6), {0.8660239, -0.8660239, -0.8660239, 0.8660239}, 1e-7);
}

TEST(GroupAdvantages, BesselStdEps1e4) {
  // trainer-anchors §4: eps 1e-4 (TRL) -> +-0.8658754.
  expect_all_near(group_advantages({1, 0, 0, 1}, 1e-4), {0.8658754, -0.8658754, -0.8658754, 0.8658754}, 1e-7);
}

TEST(GroupAdvantages, NotPopulationStd) {
  // trainer-anchors §4: population std (0.5) would give +-1.0; Bessel must not.
  const auto a = group_advantages({1, 0, 0, 1}, 1e-6);
  EXPECT_GT(std::abs(a[0] - 1.0), 0.1);
}

TEST(GroupAdvantages, OneWinner) {
  // trainer-anchors §4: [1,0,0,0] -> [1.499997, -0.499999 x3] (eps 1e-6; std = 0.5 unbiased).
  expect_all_near(group_advantages({1, 0, 0, 0}, 1e-6), {1.499997, -0.499999, -0.499999, -0.499999}, 1e-6);
}

TEST(GroupAdvantages, AllEqualGivesZeros) {
  for (double v : {0.0, 1.0, 0.3}) {
    const auto a = group_advantages({v, v, v, v}, 1e-6);
    for (double x : a) EXPECT_EQ(x, 0.0);
  }
}

TEST(GroupAdvantages, SizeOneAndEmpty) {
  EXPECT_EQ(group_advantages({0.7}, 1e-6), std::vector<double>{0.0});
  EXPECT_TRUE(group_advantages({}, 1e-6).empty());
}

TEST(GroupAdvantages, NoStdScaling) {
  // Dr.GRPO: r - mean, by hand: mean 0.25.
  expect_all_near(group_advantages({1, 0, 0, 0}, 1e-6, false), {0.75, -0.25, -0.25, -0.25}, 1e-15);
}

// ---------------------------------------------------------------- actor advantages (reference §5)

TEST(ActorAdvantages, PerEnvironmentZScoreEps1e8) {
  // reference §5: per-game z-score with eps 1e-8. Game "a" = [1,0,0,0] -> 1.5/(0.5+1e-8) etc.;
  // game "b" = [1,0,1,1] mirrored; game "c" all-equal -> 0; interleaved order is preserved.
  // Values from Python statistics.stdev: 1.49999997, -0.49999999.
  const std::vector<double> r = {1, 1, 0, 0, 0, 1, 0, 1, 0.5, 0, 0.5};
  const std::vector<std::string> g = {"a", "b", "a", "b", "a", "b", "a", "b", "c", "c", "c"};
  // game c = [0.5, 0, 0.5]: mean 1/3, unbiased std sqrt(1/12) = 0.288675; (0.5-1/3)/0.288675 = 0.577350
  const double c_hi = (0.5 - 1.0 / 3.0) / (std::sqrt(1.0 / 12.0) + 1e-8);
  const double c_lo = (0.0 - 1.0 / 3.0) / (std::sqrt(1.0 / 12.0) + 1e-8);
  expect_all_near(actor_advantages(r, g),
                  {1.49999997, 0.49999999, -0.49999999, -1.49999997, -0.49999999, 0.49999999, -0.49999999,
                   0.49999999, c_hi, c_lo, c_hi},
                  1e-8);
  EXPECT_NEAR(c_hi, 0.5773502, 1e-6);
  EXPECT_THROW(actor_advantages({1, 0}, {"a"}), spade::Error);
}

TEST(ActorAdvantages, DrGrpoNoStdScalingPerEnvironment) {
  // reward.scale_by_std = false (Dr.GRPO, trainer-anchors §1): r - mean of the play's environment,
  // no std division and no eps. By hand: game "a" = [1, 0, 0] mean 1/3 -> [2/3, -1/3, -1/3];
  // game "b" = [0.5, -1] mean -0.25 -> [0.75, -0.75]; game "c" = [0.2, 0.2] all equal -> [0, 0];
  // game "d" = [0.9] alone -> 0. Interleaved order is preserved.
  const std::vector<double> r = {1, 0.5, 0, 0.2, -1, 0, 0.2, 0.9};
  const std::vector<std::string> g = {"a", "b", "a", "c", "b", "a", "c", "d"};
  const std::vector<double> want = {2.0 / 3.0, 0.75, -1.0 / 3.0, 0.0, -0.75, -1.0 / 3.0, 0.0, 0.0};
  expect_all_near(actor_advantages(r, g, kActorAdvantageEps, /*scale_by_std=*/false), want, 1e-15);
  // eps plays no part without std scaling: a huge eps changes nothing.
  expect_all_near(actor_advantages(r, g, 10.0, false), want, 1e-15);
  // The same groups with std scaling differ (game "b": unbiased std 0.75*sqrt(2) = 1.06066 ->
  // +-0.75 / 1.06066 = +-0.7071068), so the flag is really passed through.
  const std::vector<double> z = actor_advantages(r, g, kActorAdvantageEps, true);
  EXPECT_NEAR(z[1], 0.7071068, 1e-6);
  EXPECT_NEAR(z[4], -0.7071068, 1e-6);
}

// ---------------------------------------------------------------- regret, plateau, blend (paper 4.1/4.2, reference §5)

TEST(HintRegret, MeansAndFailedHint) {
  // By hand: hinted [1,1,0,1] -> 0.75; no-hint [0,1,0,0] -> 0.25; regret 0.5.
  const HintRegret h = hint_regret({1, 1, 0, 1}, {0, 1, 0, 0});
  EXPECT_DOUBLE_EQ(h.r_hint, 0.75);
  EXPECT_DOUBLE_EQ(h.r_nohint, 0.25);
  EXPECT_DOUBLE_EQ(h.regret, 0.5);
  // reference §5: failed hint -> r_hint = 0, so regret = -0.25.
  const HintRegret f = hint_regret({1, 1, 1, 1}, {0, 1, 0, 0}, /*hint_ok=*/false);
  EXPECT_DOUBLE_EQ(f.r_hint, 0.0);
  EXPECT_DOUBLE_EQ(f.regret, -0.25);
}

TEST(NormalisedRegret, FloorAndCap) {
  // reference §5: clip(regret / 0.15, 0, 1).
  EXPECT_DOUBLE_EQ(normalised_regret(-0.2), 0.0);  // floor
  EXPECT_DOUBLE_EQ(normalised_regret(0.0), 0.0);
  EXPECT_NEAR(normalised_regret(0.06), 0.4, 1e-12);  // 0.06 / 0.15
  EXPECT_NEAR(normalised_regret(0.15), 1.0, 1e-12);
  EXPECT_DOUBLE_EQ(normalised_regret(0.3), 1.0);  // cap
  EXPECT_THROW(normalised_regret(0.1, 0.0), spade::Error);
}

TEST(Plateau, ByHand) {
  // reference §5: 1 on [0.4, 0.6], linear to 0 over 0.25 each side.
  EXPECT_NEAR(plateau(0.0), 0.0, 1e-12);
  EXPECT_NEAR(plateau(0.15), 0.0, 1e-12);  // 1 - 0.25/0.25
  EXPECT_NEAR(plateau(0.2), 0.2, 1e-12);   // 1 - 0.2/0.25
  EXPECT_NEAR(plateau(0.4), 1.0, 1e-12);
  EXPECT_NEAR(plateau(0.5), 1.0, 1e-12);
  EXPECT_NEAR(plateau(0.6), 1.0, 1e-12);
  EXPECT_NEAR(plateau(0.7), 0.6, 1e-12);   // 1 - 0.1/0.25
  EXPECT_NEAR(plateau(0.85), 0.0, 1e-12);  // 1 - 0.25/0.25
  EXPECT_NEAR(plateau(1.0), 0.0, 1e-12);
  // Configurable: band [0.3, 0.5], ramp 0.1: w = 0.25 -> 0.5, w = 0.55 -> 0.5.
  const PlateauConfig c{0.3, 0.5, 0.1};
  EXPECT_NEAR(plateau(0.25, c), 0.5, 1e-12);
  EXPECT_NEAR(plateau(0.55, c), 0.5, 1e-12);
  EXPECT_THROW(plateau(0.5, PlateauConfig{0.6, 0.4, 0.25}), spade::Error);
}

TEST(Blend, ByHand) {
  // reference §5: 0.4 * clip(regret/0.15, 0, 1) + 0.6 * plateau(w).
  EXPECT_NEAR(blend_reward(0.06, 0.5), 0.4 * 0.4 + 0.6 * 1.0, 1e-12);   // 0.76
  EXPECT_NEAR(blend_reward(0.3, 0.7), 0.4 * 1.0 + 0.6 * 0.6, 1e-12);    // 0.76 (regret capped)
  EXPECT_NEAR(blend_reward(-0.2, 0.2), 0.4 * 0.0 + 0.6 * 0.2, 1e-12);   // 0.12 (regret floored)
  EXPECT_NEAR(blend_reward(0.5, 0.95), 0.4, 1e-12);                    // too easy: plateau 0
  // Custom weights 0.5/0.5: regret 0.075 -> 0.5; w 0.3 -> plateau 0.6; 0.25 + 0.3.
  BlendConfig c;
  c.regret_weight = 0.5;
  c.plateau_weight = 0.5;
  EXPECT_NEAR(blend_reward(0.075, 0.3, c), 0.55, 1e-12);
  // Frontier term (weight 1): w = 0.7 -> -(0.2^2)/0.08 = -0.5; 0.76 - 0.5.
  BlendConfig f;
  f.frontier_weight = 1.0;
  EXPECT_NEAR(blend_reward(0.3, 0.7, f), 0.26, 1e-12);
  EXPECT_NEAR(frontier_penalty(0.5), 0.0, 1e-15);
  EXPECT_NEAR(frontier_penalty(0.9), -2.0, 1e-12);  // -(0.4^2)/0.08
}

TEST(SolverVarianceBonus, ByHand) {
  // exp(-(var-0.25)^2/0.02), population variance. [1,0] -> var 0.25 -> 1.
  EXPECT_NEAR(solver_variance_bonus({1, 0}), 1.0, 1e-12);
  // [1,1] -> var 0 -> exp(-0.0625/0.02) = exp(-3.125) = 0.0439369 (Python math.exp).
  EXPECT_NEAR(solver_variance_bonus({1, 1}), 0.0439369336, 1e-9);
  // [1,0,0,0] -> var 0.1875 -> exp(-0.00390625/0.02) = 0.8225776.
  EXPECT_NEAR(solver_variance_bonus({1, 0, 0, 0}), 0.8225775624, 1e-9);
}

TEST(DesignerRawReward, Variants) {
  DesignerWindowStats s;
  s.r_hint = 0.75;
  s.r_nohint = 0.25;                          // regret 0.5
  s.window_rewards = {1, 0, 1, 0, 0, 1, 1, 0, 1, 1};  // w = 0.6
  s.skill_mu_slow = 0.3;
  DesignerRewardConfig c;
  c.variant = DesignerReward::Blend;
  EXPECT_NEAR(designer_raw_reward(s, c), 0.4 * 1.0 + 0.6 * 1.0, 1e-12);
  c.variant = DesignerReward::RegretBased;
  EXPECT_NEAR(designer_raw_reward(s, c), 0.5, 1e-12);
  c.variant = DesignerReward::LearningPotential;
  EXPECT_NEAR(designer_raw_reward(s, c), 0.3, 1e-12);  // |0.6 - 0.3|
  c.solver_variance = true;                           // var = 0.24 -> exp(-0.0001/0.02) = 0.9950125
  EXPECT_NEAR(designer_raw_reward(s, c), 0.3 + std::exp(-0.005), 1e-12);
  c.variant = DesignerReward::SolveRate;
  EXPECT_NEAR(designer_raw_reward(s, c), 1.0, 1e-12);

  // Regret floor and step timeout (reference §4/§5: -0.5 in the regret variant only).
  DesignerWindowStats neg = s;
  neg.r_hint = 0.0;
  c.variant = DesignerReward::RegretBased;
  EXPECT_DOUBLE_EQ(designer_raw_reward(neg, c), 0.0);
  neg.step_timeout = true;
  EXPECT_DOUBLE_EQ(designer_raw_reward(neg, c), -0.5);
  c.variant = DesignerReward::Blend;
  EXPECT_NEAR(designer_raw_reward(neg, c), 0.6, 1e-12);  // timeout ignored by the blend

  // Learning potential with no plays: 0.
  DesignerWindowStats empty;
  empty.skill_mu_slow = 0.4;
  c.variant = DesignerReward::LearningPotential;
  EXPECT_DOUBLE_EQ(designer_raw_reward(empty, c), 0.0);
}

TEST(DesignerRewardNames, RoundTripAndError) {
  for (auto v : {DesignerReward::Blend, DesignerReward::RegretBased, DesignerReward::LearningPotential,
                 DesignerReward::SolveRate}) {
    EXPECT_EQ(parse_designer_reward(to_string(v)), v);
  }
  EXPECT_EQ(parse_designer_reward("learning_potential"), DesignerReward::LearningPotential);
  try {
    parse_designer_reward("regret");
    FAIL() << "expected spade::Error";
  } catch (const spade::Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("'regret'"), std::string::npos) << msg;
    for (const char* name : {"blend", "regret_based", "learning_potential", "solve_rate"})
      EXPECT_NE(msg.find(name), std::string::npos) << msg;
  }
}

// ---------------------------------------------------------------- designer advantages (reference §5)

TEST(DesignerScale, GamesAndCap) {
  // reference §5: S = min(N_actor / N_env * k, 50); games 192 / 24 * 4 = 32.
  EXPECT_DOUBLE_EQ(designer_reward_scale(192, 24, 4), 32.0);
  // Tool use 4B: 256 / 16 * 32 = 512 -> capped 50.
  EXPECT_DOUBLE_EQ(designer_reward_scale(256, 16, 32), 50.0);
  // Tool use 8B: 192 / 24 * 8 = 64 -> 50.
  EXPECT_DOUBLE_EQ(designer_reward_scale(192, 24, 8), 50.0);
  EXPECT_DOUBLE_EQ(designer_reward_scale(192, 24, 8, 100.0), 64.0);
  EXPECT_DOUBLE_EQ(designer_reward_scale(0, 24, 4), 1.0);  // authors: degenerate counts -> 1
  EXPECT_THROW(designer_reward_scale(192, 24, 0), spade::Error);
}

TEST(DesignerAdvantages, PerSkillCentringNoStd) {
  // By hand: skill A raw [0.76, 0.12, 0.4], mean 1.28/3 = 0.4266667; skill B [1.0] alone -> 0; S = 32.
  // (0.76 - 0.4266667) * 32 = 10.6666667; (0.12 - 0.4266667) * 32 = -9.8133333; (0.4 - 0.4266667) * 32 = -0.8533333.
  const std::vector<DesignerSample> s = {{"A", 0.76}, {"B", 1.0}, {"A", 0.12}, {"A", 0.4}};
  const auto a = designer_advantages(s, 32.0);
  expect_all_near(a, {10.6666667, 0.0, -9.8133333, -0.8533333}, 1e-6);
  EXPECT_NEAR(a[0] + a[2] + a[3], 0.0, 1e-12);  // centred within skill
  EXPECT_TRUE(designer_advantages({}, 32.0).empty());
}

// ---------------------------------------------------------------- learning-potential EMAs (paper 7.2, reference §5)

TEST(LearningPotential, EmaByHand) {
  // mu <- (1 - g) mu + g r. From mu = 0.2, r = 1: fast (g 0.98) 0.02*0.2 + 0.98 = 0.984;
  // slow (g 0.85) 0.15*0.2 + 0.85 = 0.88; LP = |0.984 - 0.88| / (2 * 0.13) = 0.4.
  EXPECT_NEAR(ema_update(0.2, 1.0, 0.98), 0.984, 1e-15);
  EXPECT_NEAR(ema_update(0.2, 1.0, 0.85), 0.88, 1e-15);
  SkillEma e;  // paper defaults 0.98 / 0.85
  EXPECT_FALSE(e.initialised());
  EXPECT_DOUBLE_EQ(e.baseline(), 0.0);
  EXPECT_DOUBLE_EQ(e.update(0.2), 0.0);  // first observation initialises both
  EXPECT_DOUBLE_EQ(e.mu_fast(), 0.2);
  EXPECT_DOUBLE_EQ(e.mu_slow(), 0.2);
  EXPECT_NEAR(e.update(1.0), 0.4, 1e-12);
  EXPECT_NEAR(e.mu_fast(), 0.984, 1e-12);
  EXPECT_NEAR(e.mu_slow(), 0.88, 1e-12);
  EXPECT_NEAR(e.baseline(), 0.88, 1e-12);
  EXPECT_NEAR(e.signed_learning_potential(), 0.4, 1e-12);
  // Then r = 0: fast 0.02*0.984 = 0.01968; slow 0.15*0.88 = 0.132; signed (0.01968-0.132)/0.26 = -0.432.
  EXPECT_NEAR(e.update(0.0), 0.432, 1e-12);
  EXPECT_NEAR(e.signed_learning_potential(), -0.432, 1e-12);
}

TEST(LearningPotential, CodeDefaultsAndValidation) {
  // Authors' code defaults 0.99 / 0.95: from 0 with r = 1: fast 0.99, slow 0.95, LP 0.04/0.08 = 0.5.
  SkillEma e(LearningPotentialConfig{0.99, 0.95});
  e.update(0.0);
  EXPECT_NEAR(e.update(1.0), 0.5, 1e-12);
  EXPECT_THROW(SkillEma(LearningPotentialConfig{0.85, 0.98}), spade::Error);
  EXPECT_THROW(SkillEma(LearningPotentialConfig{0.9, 0.0}), spade::Error);
}

TEST(LearningPotential, TrackerPerSkill) {
  LearningPotentialTracker t;
  EXPECT_DOUBLE_EQ(t.baseline("Optimization"), 0.0);
  EXPECT_EQ(t.find("Optimization"), nullptr);
  t.update("Optimization", 0.2);
  t.update("Optimization", 1.0);
  t.update("Logical Deduction", 0.5);
  EXPECT_NEAR(t.baseline("Optimization"), 0.88, 1e-12);
  EXPECT_NEAR(t.baseline("Logical Deduction"), 0.5, 1e-12);
  EXPECT_EQ(t.skills().size(), 2u);
  t.at("Spatial Reasoning").restore(0.3, 0.4);
  EXPECT_NEAR(t.baseline("Spatial Reasoning"), 0.4, 1e-15);
}

TEST(LearningPotential, OneStepPerSkillPerRoundWithTheMeanOverItsEnvironments) {
  // Paper Sec. 7.2: the EMAs track r_bar_{A,t}(s), the mean over skill s's environments in round t.
  // Defaults g_fast 0.98, g_slow 0.85. By hand:
  //   round 1, skill A envs {0, 1}: r = 0.5 initialises both to 0.5; skill B env {0.2}: both 0.2.
  //   round 2, skill A envs {1, 1, 1}: r = 1: fast = 0.02 * 0.5 + 0.98 = 0.99, slow = 0.15 * 0.5 + 0.85 = 0.925,
  //   LP = |0.99 - 0.925| / (2 * 0.13) = 0.25. Skill B absent: unchanged.
  // (Updating once per environment instead gives round 1: A fast 0.98, slow 0.85 from 0 then 1.)
  LearningPotentialTracker t;
  t.update_round({{"A", 0.0}, {"A", 1.0}, {"B", 0.2}});
  EXPECT_NEAR(t.find("A")->mu_fast(), 0.5, 1e-15);
  EXPECT_NEAR(t.find("A")->mu_slow(), 0.5, 1e-15);
  EXPECT_NEAR(t.baseline("B"), 0.2, 1e-15);
  t.update_round({{"A", 1.0}, {"A", 1.0}, {"A", 1.0}});
  EXPECT_NEAR(t.find("A")->mu_fast(), 0.99, 1e-12);
  EXPECT_NEAR(t.find("A")->mu_slow(), 0.925, 1e-12);
  EXPECT_NEAR(t.find("A")->learning_potential(), 0.25, 1e-12);
  EXPECT_NEAR(t.find("B")->mu_fast(), 0.2, 1e-15);
  EXPECT_THROW(t.update_round({{"C", std::nan("")}}), spade::Error);
}

// ---------------------------------------------------------------- non-finite rewards (issue 17)

// One NaN would make a group's mean and std NaN, hence every advantage of the group: it is refused with
// the non_finite_reward error naming the reward, never propagated.
TEST(Advantages, NonFiniteRewardsAreRefusedByName) {
  const double nan = std::nan(""), inf = std::numeric_limits<double>::infinity();
  auto error_of = [](const std::function<void()>& f) -> std::string {
    try {
      f();
    } catch (const spade::Error& e) {
      return e.what();
    }
    return "";
  };
  std::string e = error_of([&] { group_advantages({1.0, nan, 0.0}, 1e-6); });
  EXPECT_NE(e.find("group_advantages: reward 1 is nan"), std::string::npos) << e;
  EXPECT_NE(e.find("[non_finite_reward]"), std::string::npos) << e;
  e = error_of([&] { group_advantages({inf}, 1e-6); });  // even a group of one (its advantage would be 0)
  EXPECT_NE(e.find("reward 0 is inf"), std::string::npos) << e;
  e = error_of([&] { group_advantages({1.0, 0.0}, inf); });
  EXPECT_NE(e.find("eps must be finite"), std::string::npos) << e;

  e = error_of([&] { actor_advantages({1.0, 0.0, -inf}, {"a", "a", "b"}); });
  EXPECT_NE(e.find("actor_advantages: the reward of play 2 (environment 'b') is -inf"), std::string::npos) << e;
  EXPECT_NE(e.find("[non_finite_reward]"), std::string::npos) << e;

  e = error_of([&] { designer_advantages({{"logic", 0.5}, {"math", nan}}, 32.0); });
  EXPECT_NE(e.find("designer_advantages: the reward of sample 1 (skill 'math') is nan"), std::string::npos) << e;
  e = error_of([&] { designer_advantages({{"logic", 0.5}}, nan); });
  EXPECT_NE(e.find("scale must be finite"), std::string::npos) << e;
  e = error_of([&] { designer_reward_scale(192, 24, 4, inf); });
  EXPECT_NE(e.find("cap must be finite"), std::string::npos) << e;

  // Finite inputs are unaffected: [1, -1, 1, -1] -> mean 0, Bessel std sqrt(4/3) = 1.1547005,
  // advantages +-1 / (1.1547005 + 1e-8) = +-0.8660254.
  expect_all_near(actor_advantages({1, -1, 1, -1}, {"g", "g", "g", "g"}), {0.8660254, -0.8660254, 0.8660254, -0.8660254},
                  1e-7);
}
