#include "evaldual/bradley_terry.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>

#include "common/error.h"

namespace spade::evaldual {

void PairwiseCounts::add(int a, int b, double score_a, double weight) {
  if (a < 0 || b < 0 || a >= n || b >= n) {
    throw Error("PairwiseCounts::add: participant index " + std::to_string(a < 0 || a >= n ? a : b) +
                " is outside 0.." + std::to_string(n - 1));
  }
  if (a == b) throw Error("PairwiseCounts::add: participant " + std::to_string(a) + " cannot play itself");
  credit[idx(a, b)] += weight * score_a;
  credit[idx(b, a)] += weight * (1.0 - score_a);
}

void PairwiseCounts::clear() { std::fill(credit.begin(), credit.end(), 0.0); }

namespace {

int find_root(std::vector<int>& parent, int x) {
  while (parent[x] != x) {
    parent[x] = parent[parent[x]];
    x = parent[x];
  }
  return x;
}

struct Pair {
  int i, j;
  double games, credit_ij, credit_ji;
};

}  // namespace

BtFit fit_bradley_terry(const PairwiseCounts& counts, const BtOptions& options) {
  const int n = counts.n;
  BtFit fit;
  fit.scores.assign(n, 0.0);
  fit.component.assign(n, 0);
  if (n == 0) {
    fit.converged = true;
    return fit;
  }

  // Played pairs (sparse) and connected components (union-find).
  std::vector<Pair> pairs;
  std::vector<int> parent(n);
  std::iota(parent.begin(), parent.end(), 0);
  for (int i = 0; i < n; ++i) {
    for (int j = i + 1; j < n; ++j) {
      double cij = counts.credit[counts.idx(i, j)], cji = counts.credit[counts.idx(j, i)];
      double g = cij + cji;
      if (g > 0) {
        pairs.push_back({i, j, g, cij, cji});
        parent[find_root(parent, i)] = find_root(parent, j);
      }
    }
  }
  std::vector<int> root_to_comp(n, -1);
  for (int i = 0; i < n; ++i) {
    int r = find_root(parent, i);
    if (root_to_comp[r] < 0) root_to_comp[r] = fit.components++;
    fit.component[i] = root_to_comp[r];
  }
  std::vector<int> comp_size(fit.components, 0);
  for (int i = 0; i < n; ++i) ++comp_size[fit.component[i]];

  // W_i summed in pair order, like the denominators, so that balanced data (all draws) gives exactly 1.
  std::vector<double> wins(n, 0.0);
  for (const Pair& pr : pairs) {
    wins[pr.i] += pr.credit_ij;
    wins[pr.j] += pr.credit_ji;
  }

  std::vector<double> p(n, 1.0), next(n), denom(n), comp_logsum(fit.components);
  const double ratio_hi = std::exp(options.tolerance), ratio_lo = std::exp(-options.tolerance);
  fit.converged = pairs.empty();
  for (int it = 0; it < options.max_iterations && !pairs.empty(); ++it) {
    std::fill(denom.begin(), denom.end(), 0.0);
    for (const Pair& pr : pairs) {
      double t = pr.games / (p[pr.i] + p[pr.j]);
      denom[pr.i] += t;
      denom[pr.j] += t;
    }
    std::fill(comp_logsum.begin(), comp_logsum.end(), 0.0);
    for (int i = 0; i < n; ++i) {
      // Reference §6: zero wins or a zero denominator -> unchanged.
      next[i] = (wins[i] > 0 && denom[i] > 0) ? wins[i] / denom[i] : p[i];
      comp_logsum[fit.component[i]] += std::log(next[i]);
    }
    for (int c = 0; c < fit.components; ++c) comp_logsum[c] = std::exp(-comp_logsum[c] / comp_size[c]);
    bool done = true;
    for (int i = 0; i < n; ++i) {
      next[i] *= comp_logsum[fit.component[i]];  // geometric mean 1 per component
      double r = next[i] / p[i];
      if (r > ratio_hi || r < ratio_lo) done = false;
    }
    p.swap(next);
    fit.iterations = it + 1;
    if (done) {
      fit.converged = true;
      break;
    }
  }

  // Centre exactly (removes rounding drift of the normalisation).
  std::vector<double> mean(fit.components, 0.0);
  for (int i = 0; i < n; ++i) {
    fit.scores[i] = std::log(p[i]);
    mean[fit.component[i]] += fit.scores[i];
  }
  for (int i = 0; i < n; ++i) fit.scores[i] -= mean[fit.component[i]] / comp_size[fit.component[i]];
  return fit;
}

std::vector<int> rank_by_score(const std::vector<double>& scores, const std::vector<std::string>& ids) {
  if (scores.size() != ids.size()) {
    throw Error("rank_by_score: " + std::to_string(scores.size()) + " scores but " + std::to_string(ids.size()) +
                " ids");
  }
  const size_t n = scores.size();
  std::vector<int64_t> key(n);
  for (size_t i = 0; i < n; ++i) key[i] = std::llround(scores[i] * 1e9);  // equal to 1e-9: a tie
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (key[a] != key[b]) return key[a] > key[b];
    return ids[a] < ids[b];
  });
  std::vector<int> rank(n);
  for (size_t r = 0; r < n; ++r) rank[order[r]] = static_cast<int>(r) + 1;
  return rank;
}

}  // namespace spade::evaldual
