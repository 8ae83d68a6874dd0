// Interval estimates and pass@k for evaluation results (spade eval, spade report, spade ablate): every
// success rate spade prints carries a 95% interval. Torch-free; pure functions, thread-safe.
#pragma once
#include <cstdint>
#include <utility>
#include <vector>

namespace spade {

/// z for a two-sided 95% interval: the 0.975 quantile of the standard normal.
inline constexpr double kZ95 = 1.959964;

/// The 95% Wilson score interval of `successes` out of `n` (Wilson 1927; Newcombe 1998, method 3, no
/// continuity correction); (0, 0) when n == 0. Both bounds in [0, 1].
std::pair<double, double> wilson_interval(double successes, double n);

/// Unbiased pass@k of Chen et al. 2021 ("Evaluating Large Language Models Trained on Code", eq. 1):
/// 1 - C(n - c, k) / C(n, k), the chance that at least one of k plays drawn without replacement from
/// the n played wins, computed as the product 1 - prod_{i = n-c+1}^{n} (1 - k / i) (their numerically
/// stable form). Requires 0 <= c <= n and 1 <= k <= n; throws spade::Error otherwise.
double pass_at_k(int n, int c, int k);

/// Mean of `values` with a 95% percentile-bootstrap interval (Efron & Tibshirani 1993, ch. 13):
/// `resamples` resamples of values.size() draws with replacement from a splitmix64 stream seeded
/// with `seed`; the 2.5% and 97.5% quantiles of the resampled means (linear interpolation between
/// order statistics). Deterministic for a given seed. Empty `values`: {0, 0, 0}. Throws spade::Error
/// for resamples < 1.
struct MeanInterval {
  double mean = 0, low = 0, high = 0;
};
MeanInterval bootstrap_mean_interval(const std::vector<double>& values, int resamples = 2000, uint64_t seed = 42);

}  // namespace spade
