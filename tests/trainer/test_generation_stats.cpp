// trainer/formula_text.h and trainer/generation_stats.h on hand-written observations and canned
// generations: which first observations state a formula, reward levels counted by hand, the measured
// environments (designed ones; every pool draw in fixed_pool mode), and the rollouts.h5 rows of a
// closing generation with win rates and regrets worked out in the comments.
#include <gtest/gtest.h>

#include <cmath>

#include "trainer/formula_text.h"
#include "trainer/generation_stats.h"

using namespace spade::trainer;

namespace {

LiveEnv env(const std::string& id, const std::string& code, bool from_seed, std::vector<double> window,
            double regret = 0) {
  LiveEnv e;
  e.id = id;
  e.skill = "math";
  e.code = code;
  e.hint = "h";
  e.born = 3;
  e.from_seed = from_seed;
  e.window_rewards = std::move(window);
  e.regret = regret;
  return e;
}

}  // namespace

TEST(FormulaText, HandWrittenObservations) {
  // Giveaways: an equation with a variable on the left and variables and an operator on the right.
  for (const char* obs : {"A block of mass m = 3 kg is pushed. Recall F = m * a. Report F in \\boxed{}.",
                          "Energy: E = m*c^2 where c is the speed of light.",
                          "Your score = 10 - guesses, so guess wisely!",
                          "The line is y = 2x + 1. What is y at x = 4?",
                          "f(x) = x / 2 + 1\nFind f(6).",
                          "Area = length \xC3\x97 width (Unicode times sign).",
                          // Two seed games (data/seed_envs/causal/ohm.py, kinematics.py) that give the law away.
                          "Use Ohm's law V = I * R. A 20 ohm resistor carries 3 A. What voltage (V) is across it?",
                          "Final speed in m/s? (v = v0 + a*t)"})
    EXPECT_TRUE(states_formula(obs)) << obs;
  // Not giveaways: values, blanks, lists, arrows, comparisons, prose.
  for (const char* obs : {"I picked a number; x = 5 was your last guess.",
                          "target = ?",
                          "Settings: a=1, b=2, c=3",
                          "pos=3 -> 4",
                          "if a == b + c the door opens",
                          "x = -5 is below the range",
                          "Distance is speed times time. Answer in \\boxed{}.",
                          "==== Round 1 ====\nGuess a number between 1 and 100.",
                          // Seed games (math/linear_eq.py, math/mod_inverse.py, causal/switches.py): a number
                          // left of the '=', no operator right of it, or plain settings.
                          "Solve for x: 4x - 16 = 20. Answer with x.",
                          "Find x in 1..6 with 6 * x = 1 (mod 7).",
                          "Lamp circuit: (S1 series S2) parallel S3. S1=off S2=on S3=off, lamp off.",
                          ""})
    EXPECT_FALSE(states_formula(obs)) << obs;
}

TEST(GenerationStats, DistinctRewardLevels) {
  // {0, 0.5, 1, 0.5, 0, -1}: the levels -1, 0, 0.5, 1 (4); strictly partial (0 < r < 1): 0.5 (1).
  EXPECT_EQ(distinct_reward_levels({0, 0.5, 1, 0.5, 0, -1}), 4);
  EXPECT_EQ(partial_reward_levels({0, 0.5, 1, 0.5, 0, -1}), 1);
  // Binary rewards: 2 levels, none partial. 0.25 and 0.25 + 1e-12 are one level (within 1e-9).
  EXPECT_EQ(distinct_reward_levels({1, 0, 1, 1}), 2);
  EXPECT_EQ(partial_reward_levels({1, 0, 1, 1}), 0);
  EXPECT_EQ(distinct_reward_levels({0.25, 0.25 + 1e-12, 0.75}), 2);
  EXPECT_EQ(partial_reward_levels({0.25, 0.25 + 1e-12, 0.75}), 2);
  EXPECT_EQ(distinct_reward_levels({}), 0);
}

TEST(GenerationStats, NewGenerationDiversityAndGiveaways) {
  const std::string guess = "class GuessEnv:\n    def reset(self, seed=None):\n        return 'guess', {}\n";
  const std::string loop = "while True:\n    pass\n";
  // Designed: two copies of one program and one unlike it; a seed fill-in that is not measured.
  const std::vector<LiveEnv> live = {env("a", guess, false, {}), env("b", guess, false, {}), env("c", loop, false, {}),
                                     env("seed", "import os\n", true, {})};
  // a: one of its two plays opens with a formula; b: none; c: its only play; seed: not measured.
  const std::vector<FirstObservation> plays = {{"a", "Guess."}, {"a", "Use F = m * a."}, {"b", "x = 5"},
                                               {"b", "Guess."}, {"c", "v = u + a*t"}, {"seed", "E = m*c^2"}};
  GenerationRecord g;
  describe_generation(live, /*fixed_pool=*/false, plays, g);
  // Vendi of [[1,1,0],[1,1,0],[0,0,1]] = exp(-(2/3 ln 2/3 + 1/3 ln 1/3)) = 1.8898816 (tests/common/test_vendi.cpp).
  ASSERT_TRUE(g.vendi_score.has_value());
  EXPECT_NEAR(*g.vendi_score, 1.8898816, 1e-6);
  EXPECT_EQ(g.vendi_envs, 3);
  ASSERT_TRUE(g.formula_in_first_obs.has_value());
  EXPECT_DOUBLE_EQ(*g.formula_in_first_obs, 2.0 / 3);  // a and c of the 3 designed
  // Fixed pool: every draw is measured; the fourth program shares no 3-gram with the others, so
  // K is the block [[1,1],[1,1]] plus 1, 1 on the diagonal: K / 4 has 2/4, 1/4, 1/4, 0 and
  // VS = exp(-(1/2 ln 1/2 + 2 (1/4) ln 1/4)) = exp(0.3465736 + 0.6931472) = exp(1.0397208) = 2.8284271 (= 2 sqrt 2).
  describe_generation(live, /*fixed_pool=*/true, plays, g);
  EXPECT_NEAR(*g.vendi_score, 2 * std::sqrt(2.0), 1e-9);
  EXPECT_EQ(g.vendi_envs, 4);
  EXPECT_DOUBLE_EQ(*g.formula_in_first_obs, 3.0 / 4);  // a, c and seed of 4
  // Only seed fill-ins in self-play: nothing measured, nothing logged.
  describe_generation({env("seed", "import os\n", true, {})}, false, plays, g);
  EXPECT_FALSE(g.vendi_score.has_value());
  EXPECT_FALSE(g.formula_in_first_obs.has_value());
}

TEST(GenerationStats, ClosingGenerationRowsAndRewardLevels) {
  // Windows of k = 2 steps x 2 plays; a win is reward > 0, partial credit included.
  // a: {1, 0.5, 0, 0.5}: 3 levels, 1 partial, 3 of 4 won; b: {0, 0, 0, 1}:
  // 2 levels, none partial, 1 of 4 won; the seed fill-in {1, 1, 1, 1}: won 4 of 4, not in the means.
  const std::vector<LiveEnv> live = {env("a", "A", false, {1, 0.5, 0, 0.5}, 0.25),
                                     env("b", "B", false, {0, 0, 0, 1}, -0.5), env("s", "S", true, {1, 1, 1, 1}, 0)};
  const GenerationCloseRecord c = close_generation(live, /*fixed_pool=*/false, 5);
  EXPECT_DOUBLE_EQ(*c.reward_levels, 2.5);          // (3 + 2) / 2
  EXPECT_DOUBLE_EQ(*c.partial_reward_levels, 0.5);  // (1 + 0) / 2
  ASSERT_EQ(c.environments.size(), 3u);  // every environment has its row, the fill-in too
  const EnvironmentRow& a = c.environments[0];
  EXPECT_EQ(a.id, "a");
  EXPECT_EQ(a.born, 3);
  EXPECT_EQ(a.closed, 5);
  EXPECT_EQ(a.window_plays, 4);
  EXPECT_DOUBLE_EQ(a.win_rate, 0.75);
  EXPECT_DOUBLE_EQ(a.regret, 0.25);
  EXPECT_DOUBLE_EQ(c.environments[1].win_rate, 0.25);
  EXPECT_DOUBLE_EQ(c.environments[1].regret, -0.5);
  EXPECT_TRUE(c.environments[2].from_seed);
  EXPECT_DOUBLE_EQ(c.environments[2].win_rate, 1);
  // Fixed pool: all three measured ((3 + 2 + 1) / 3 = 2 levels, (1 + 0 + 0) / 3 partial), no regret.
  const GenerationCloseRecord p = close_generation(live, /*fixed_pool=*/true, 5);
  EXPECT_DOUBLE_EQ(*p.reward_levels, 2);
  EXPECT_DOUBLE_EQ(*p.partial_reward_levels, 1.0 / 3);
  EXPECT_TRUE(std::isnan(p.environments[0].regret));
  // An environment with no play yet: win rate NaN; no measured environment: no levels.
  const GenerationCloseRecord e = close_generation({env("s", "S", true, {})}, false, 1);
  EXPECT_TRUE(std::isnan(e.environments[0].win_rate));
  EXPECT_FALSE(e.reward_levels.has_value());
}
