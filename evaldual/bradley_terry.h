// Bradley-Terry ratings for SWE-Duel (paper §3.5 "Metric"; reference §6 "Bradley-Terry").
//
// Model: Pr(i beats j) = p_i / (p_i + p_j) = sigma(beta_i - beta_j), beta = log p (Bradley and Terry,
// 1952). A draw counts as half a win for each side (paper §3.5). Fit: maximum likelihood by
// minorization-maximization (Hunter 2004, "MM algorithms for generalized Bradley-Terry models", eq. 3),
// with the reference's simultaneous update
//     p_i <- W_i / sum_j n_ij / (p_i + p_j)
// (W_i: i's wins plus half its draws; n_ij: games between i and j), the geometric mean of p normalised
// to 1 after every iteration (log-strengths centred at 0), at most 1000 iterations, stopping when no
// log-strength moved by more than 1e-6 in an iteration (reference §6; the unit of the tolerance, max
// |delta log p|, is ours).
//
// Ill-posed data (no finite MLE exists; Hunter 2004 §2, Ford's condition) is handled without NaN:
//  - Disconnected comparison graph: participants are split into connected components (i ~ j when they
//    played at least once). Strengths in different components are not comparable (the likelihood does
//    not depend on their offset), so each component is fitted on its own and centred on its own: every
//    component's log-strengths have mean 0, hence so do all of them. Ranks across components then
//    compare numbers that share no scale; BtFit::component says which participants are comparable.
//    A participant with no games is its own component with score 0.
//  - All draws: every p stays 1 (W_i equals the denominator exactly); scores 0, converged at once.
//  - Zero wins (W_i = 0; the MLE is -infinity) or a zero denominator: p_i is left unchanged by the
//    update, as in the reference; normalisation then pushes it down a little each iteration. Likewise a
//    participant with no losses drifts up. Such scores are finite but depend on the iteration cap; the
//    ordering they give is right (all-loss last, all-win first) and BtFit::converged is false.
//
// Thread-safety: pure functions on plain values; thread-safe.
#pragma once
#include <string>
#include <vector>

namespace spade::evaldual {

/// Options of the MM fit. Defaults are the reference's (§6).
struct BtOptions {
  int max_iterations = 1000;  // reference §6: <= 1000 iterations
  double tolerance = 1e-6;    // reference §6: tol 1e-6, applied to max_i |delta log p_i| per iteration
};

/// Pairwise results among n participants, indexed 0..n-1.
struct PairwiseCounts {
  explicit PairwiseCounts(int n = 0) : n(n), credit(static_cast<size_t>(n) * n, 0.0) {}

  /// Records a comparison of a vs b where a scored `score_a` (1 win, 0.5 draw, 0 loss) and b scored
  /// 1 - score_a, counted `weight` times. Throws spade::Error when a == b or an index is out of range.
  void add(int a, int b, double score_a, double weight = 1.0);
  /// Games between i and j (n_ij).
  double games(int i, int j) const { return credit[idx(i, j)] + credit[idx(j, i)]; }
  /// Sets every count to 0 (keeps n).
  void clear();

  size_t idx(int i, int j) const { return static_cast<size_t>(i) * n + j; }

  int n;
  std::vector<double> credit;  // credit[i*n+j]: i's wins over j plus half the draws between them
};

/// Result of one fit.
struct BtFit {
  std::vector<double> scores;  // log-strengths beta_i, mean 0 within every component (natural log)
  std::vector<int> component;  // connected component of each participant, 0..components-1
  int components = 0;
  int iterations = 0;          // iterations run
  bool converged = false;      // false when the cap was hit (e.g. zero wins, see the file comment)
};

/// Fits Bradley-Terry by MM (see the file comment). Never throws for any counts (no NaN, no inf).
BtFit fit_bradley_terry(const PairwiseCounts& counts, const BtOptions& options = {});

/// Ranks 1..n by score descending; scores equal to 1e-9 are ties broken by `ids` ascending
/// (reference §6 "rank (ties by id)"). Returns rank[i] for participant i. Throws spade::Error when the
/// sizes differ.
std::vector<int> rank_by_score(const std::vector<double>& scores, const std::vector<std::string>& ids);

}  // namespace spade::evaldual
