// common/stats.h: the Wilson interval against published values, pass@k against hand-computed binomial
// ratios, and the percentile bootstrap against the normal approximation it must agree with.
#include <gtest/gtest.h>

#include <tuple>
#include <vector>

#include "common/error.h"
#include "common/stats.h"

namespace spade {
namespace {

TEST(Stats, WilsonIntervalMatchesNewcombe1998) {
  // Newcombe, "Two-sided confidence intervals for the single proportion", Stat. Med. 1998, Table I,
  // method 3 (score interval without continuity correction), to 4 decimals.
  const std::tuple<int, int, double, double> cases[] = {
      {81, 263, 0.2553, 0.3662}, {15, 148, 0.0624, 0.1605}, {0, 20, 0.0, 0.1611}, {1, 29, 0.0061, 0.1718}};
  for (const auto& [k, n, lo, hi] : cases) {
    const auto [l, h] = wilson_interval(k, n);
    EXPECT_NEAR(l, lo, 5e-5) << k << "/" << n;
    EXPECT_NEAR(h, hi, 5e-5) << k << "/" << n;
  }
  EXPECT_EQ(wilson_interval(0, 0), std::make_pair(0.0, 0.0));
}

TEST(Stats, PassAtKIsOneMinusTheBinomialRatio) {
  // 1 - C(n-c, k) / C(n, k), by hand: n=8, c=2, k=4: 1 - 15/70; n=10, c=3, k=2: 1 - 21/45; k=1 is c/n.
  EXPECT_NEAR(pass_at_k(8, 2, 4), 1.0 - 15.0 / 70.0, 1e-12);
  EXPECT_NEAR(pass_at_k(10, 3, 2), 1.0 - 21.0 / 45.0, 1e-12);
  EXPECT_NEAR(pass_at_k(5, 1, 1), 0.2, 1e-12);
  EXPECT_NEAR(pass_at_k(8, 3, 1), 3.0 / 8.0, 1e-12);
  EXPECT_EQ(pass_at_k(8, 0, 8), 0.0);  // no win among the plays
  EXPECT_EQ(pass_at_k(10, 3, 8), 1.0);  // only 7 losses: every 8 plays hold a win
  EXPECT_EQ(pass_at_k(8, 8, 1), 1.0);
  EXPECT_THROW(pass_at_k(8, 2, 9), Error);
  EXPECT_THROW(pass_at_k(8, 9, 1), Error);
  EXPECT_THROW(pass_at_k(0, 0, 1), Error);
}

TEST(Stats, BootstrapIntervalAgreesWithTheNormalApproximation) {
  // 50 zeros and 50 ones: mean 0.5, standard error sqrt(0.25 / 100) = 0.05, so the 95% interval is
  // about 0.5 +- 1.96 * 0.05 = [0.402, 0.598]; 4000 resamples put the percentiles within ~0.01 of it.
  std::vector<double> v(100, 0.0);
  for (int i = 0; i < 50; ++i) v[i] = 1.0;
  const MeanInterval m = bootstrap_mean_interval(v, 4000, 7);
  EXPECT_DOUBLE_EQ(m.mean, 0.5);
  EXPECT_NEAR(m.low, 0.402, 0.012);
  EXPECT_NEAR(m.high, 0.598, 0.012);
  // Deterministic for a seed; a constant sample has a zero-width interval; empty gives zeros.
  const MeanInterval again = bootstrap_mean_interval(v, 4000, 7);
  EXPECT_EQ(again.low, m.low);
  EXPECT_EQ(again.high, m.high);
  const MeanInterval flat = bootstrap_mean_interval({0.25, 0.25, 0.25}, 100, 1);
  EXPECT_DOUBLE_EQ(flat.low, 0.25);
  EXPECT_DOUBLE_EQ(flat.high, 0.25);
  const MeanInterval none = bootstrap_mean_interval({}, 100, 1);
  EXPECT_EQ(none.mean, 0.0);
  EXPECT_THROW(bootstrap_mean_interval(v, 0, 1), Error);
}

}  // namespace
}  // namespace spade
