#include "evaldual/bootstrap.h"

#include <algorithm>
#include <cmath>

#include "common/error.h"

namespace spade::evaldual {

uint64_t bounded_index(std::mt19937_64& engine, uint64_t n) {
  if (n == 0) throw Error("bounded_index: n must be positive");
  const uint64_t reject_below = (0 - n) % n;  // 2^64 mod n
  uint64_t x = engine();
  while (x < reject_below) x = engine();
  return x % n;
}

double percentile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) throw Error("percentile: no values");
  if (!(q >= 0.0 && q <= 1.0)) throw Error("percentile: q = " + std::to_string(q) + " is outside [0, 1]");
  double h = q * static_cast<double>(sorted.size() - 1);
  size_t lo = static_cast<size_t>(std::floor(h));
  if (lo + 1 >= sorted.size()) return sorted.back();
  return sorted[lo] + (h - static_cast<double>(lo)) * (sorted[lo + 1] - sorted[lo]);
}

BootstrapResult bootstrap_ratings(const std::vector<std::string>& ids, const std::vector<Comparison>& ordered,
                                  const BootstrapOptions& options) {
  const int n = static_cast<int>(ids.size());
  BootstrapResult out;
  if (options.samples <= 0) return out;
  for (size_t k = 0; k < ordered.size(); ++k) {
    const Comparison& c = ordered[k];
    if (c.a < 0 || c.b < 0 || c.a >= n || c.b >= n || c.a == c.b) {
      throw Error("bootstrap_ratings: comparison " + std::to_string(k) + " has invalid participants " +
                  std::to_string(c.a) + " vs " + std::to_string(c.b) + " (n = " + std::to_string(n) + ")");
    }
  }
  const int B = options.samples;
  const size_t M = ordered.size();
  out.samples = B;
  out.unidentified_draws.assign(n, 0);

  std::vector<double> scores(static_cast<size_t>(B) * n), elos;  // [b*n + i]
  std::vector<int> ranks(static_cast<size_t>(B) * n);
  if (options.elo) elos.resize(static_cast<size_t>(B) * n);

  std::mt19937_64 engine(options.seed);
  PairwiseCounts counts(n);
  std::vector<size_t> draw(M);
  std::vector<Comparison> replay(M);
  for (int b = 0; b < B; ++b) {
    for (size_t k = 0; k < M; ++k) draw[k] = bounded_index(engine, M);
    counts.clear();
    for (size_t k : draw) counts.add(ordered[k].a, ordered[k].b, ordered[k].score_a);
    BtFit fit = fit_bradley_terry(counts, options.bt);
    if (!fit.converged) ++out.unconverged;
    for (int i = 0; i < n; ++i) out.unidentified_draws[i] += !bt_finite(fit.status[i]);
    std::vector<int> r = rank_by_score(fit.scores);
    std::copy(fit.scores.begin(), fit.scores.end(), scores.begin() + static_cast<size_t>(b) * n);
    std::copy(r.begin(), r.end(), ranks.begin() + static_cast<size_t>(b) * n);
    if (options.elo) {
      std::sort(draw.begin(), draw.end());  // keep match-time order
      for (size_t k = 0; k < M; ++k) replay[k] = ordered[draw[k]];
      std::vector<double> e = elo_ratings(n, replay, options.elo_options);
      std::copy(e.begin(), e.end(), elos.begin() + static_cast<size_t>(b) * n);
    }
  }

  out.score_low.resize(n);
  out.score_high.resize(n);
  out.median_rank.resize(n);
  out.rank_low.resize(n);
  out.rank_high.resize(n);
  out.rank_histogram.assign(n, std::vector<int>(n, 0));
  if (options.elo) {
    out.elo_low.resize(n);
    out.elo_high.resize(n);
  }
  std::vector<double> col(B);
  for (int i = 0; i < n; ++i) {
    for (int b = 0; b < B; ++b) col[b] = scores[static_cast<size_t>(b) * n + i];
    std::sort(col.begin(), col.end());
    out.score_low[i] = percentile(col, 0.025);
    out.score_high[i] = percentile(col, 0.975);

    for (int b = 0; b < B; ++b) {
      int r = ranks[static_cast<size_t>(b) * n + i];
      ++out.rank_histogram[i][r - 1];
      col[b] = r;
    }
    std::sort(col.begin(), col.end());
    out.median_rank[i] = percentile(col, 0.5);
    out.rank_low[i] = static_cast<int>(std::floor(percentile(col, 0.025)));
    out.rank_high[i] = static_cast<int>(std::ceil(percentile(col, 0.975)));

    if (options.elo) {
      for (int b = 0; b < B; ++b) col[b] = elos[static_cast<size_t>(b) * n + i];
      std::sort(col.begin(), col.end());
      out.elo_low[i] = percentile(col, 0.025);
      out.elo_high[i] = percentile(col, 0.975);
    }
  }
  return out;
}

}  // namespace spade::evaldual
