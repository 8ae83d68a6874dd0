#include "common/stats.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "common/error.h"
#include "common/splitmix64.h"

namespace spade {

std::pair<double, double> wilson_interval(double k, double n) {
  if (!(n > 0)) return {0, 0};
  const double z = kZ95, p = k / n, d = 1 + z * z / n;
  const double c = (p + z * z / (2 * n)) / d, h = z * std::sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d;
  return {std::max(0.0, c - h), std::min(1.0, c + h)};
}

double pass_at_k(int n, int c, int k) {
  if (n < 1 || c < 0 || c > n || k < 1 || k > n)
    throw Error("pass_at_k: need 0 <= c <= n and 1 <= k <= n, got n=" + std::to_string(n) + " c=" +
                std::to_string(c) + " k=" + std::to_string(k));
  if (n - c < k) return 1.0;  // every draw of k contains a win
  double all_fail = 1.0;
  for (int i = n - c + 1; i <= n; ++i) all_fail *= 1.0 - static_cast<double>(k) / i;
  return 1.0 - all_fail;
}

MeanInterval bootstrap_mean_interval(const std::vector<double>& values, int resamples, uint64_t seed) {
  if (resamples < 1) throw Error("bootstrap_mean_interval: resamples must be >= 1, got " + std::to_string(resamples));
  MeanInterval out;
  if (values.empty()) return out;
  const size_t n = values.size();
  double sum = 0;
  for (double v : values) sum += v;
  out.mean = sum / n;
  std::vector<double> means(resamples);
  uint64_t state = seed;
  for (int b = 0; b < resamples; ++b) {
    double s = 0;
    for (size_t i = 0; i < n; ++i) {
      state = splitmix64(state);
      s += values[state % n];
    }
    means[b] = s / n;
  }
  std::sort(means.begin(), means.end());
  auto quantile = [&](double q) {
    const double pos = q * (resamples - 1);
    const size_t lo = static_cast<size_t>(std::floor(pos));
    const size_t hi = std::min(lo + 1, means.size() - 1);
    return means[lo] + (pos - lo) * (means[hi] - means[lo]);
  };
  out.low = quantile(0.025);
  out.high = quantile(0.975);
  return out;
}

}  // namespace spade
