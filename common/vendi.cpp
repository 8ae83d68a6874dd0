#include "common/vendi.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "common/error.h"
#include "common/symmetric_eigenvalues.h"

namespace spade {

double vendi_score(const std::vector<double>& k, int n) {
  if (n < 1) throw Error("vendi_score: needs at least one item, got " + std::to_string(n));
  if (k.size() != static_cast<size_t>(n) * static_cast<size_t>(n))
    throw Error("vendi_score: " + std::to_string(k.size()) + " entries for " + std::to_string(n) + " items");
  for (int i = 0; i < n; ++i)
    if (!(std::abs(k[static_cast<size_t>(i) * n + i] - 1) <= 1e-9))
      throw Error("vendi_score: similarity K[" + std::to_string(i) + "][" + std::to_string(i) + "] is not 1");
  std::vector<double> scaled(k);
  for (double& x : scaled) x /= n;
  double entropy = 0;
  for (double lambda : symmetric_eigenvalues(std::move(scaled), n))
    if (lambda > 0) entropy -= lambda * std::log(lambda);
  return std::clamp(std::exp(entropy), 1.0, static_cast<double>(n));
}

}  // namespace spade
