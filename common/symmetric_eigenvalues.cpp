#include "common/symmetric_eigenvalues.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "common/error.h"

namespace spade {

std::vector<double> symmetric_eigenvalues(std::vector<double> a, int n) {
  if (n < 0 || a.size() != static_cast<size_t>(n) * static_cast<size_t>(n))
    throw Error("symmetric_eigenvalues: " + std::to_string(a.size()) + " entries for a " + std::to_string(n) + " x " +
                std::to_string(n) + " matrix");
  const auto at = [&](int i, int j) -> double& { return a[static_cast<size_t>(i) * n + j]; };
  double total = 0;
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) {
      if (!std::isfinite(at(i, j))) throw Error("symmetric_eigenvalues: entry (" + std::to_string(i) + ", " +
                                                std::to_string(j) + ") is not finite");
      if (std::abs(at(i, j) - at(j, i)) > 1e-9 * (1 + std::abs(at(i, j))))
        throw Error("symmetric_eigenvalues: the matrix is not symmetric at (" + std::to_string(i) + ", " +
                    std::to_string(j) + ")");
      total += at(i, j) * at(i, j);
    }
  const auto off_diagonal = [&] {
    double s = 0;
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j)
        if (i != j) s += at(i, j) * at(i, j);
    return s;
  };
  for (int sweep = 0; sweep < 100 && off_diagonal() > 1e-28 * total; ++sweep)
    for (int p = 0; p < n - 1; ++p)
      for (int q = p + 1; q < n; ++q) {
        const double apq = at(p, q);
        if (apq == 0) continue;
        // The rotation (c, s) with tan = t that zeroes a[p][q] (Golub & Van Loan Alg. 8.5.1, the
        // smaller of the two roots for stability).
        const double theta = (at(q, q) - at(p, p)) / (2 * apq);
        const double t = (theta >= 0 ? 1.0 : -1.0) / (std::abs(theta) + std::sqrt(theta * theta + 1));
        const double c = 1 / std::sqrt(t * t + 1), s = t * c;
        for (int k = 0; k < n; ++k) {
          if (k == p || k == q) continue;
          const double akp = at(k, p), akq = at(k, q);
          at(k, p) = at(p, k) = c * akp - s * akq;
          at(k, q) = at(q, k) = s * akp + c * akq;
        }
        at(p, p) -= t * apq;
        at(q, q) += t * apq;
        at(p, q) = at(q, p) = 0;
      }
  std::vector<double> out(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) out[i] = at(i, i);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace spade
