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
// Ill-posed data (no finite MLE exists) is handled without NaN and marked, never shown as valid:
//  - Existence (Ford 1957; Hunter 2004 §2): within a connected comparison graph the MLE exists iff the
//    win graph (i -> j when i has any win credit over j; a draw gives both directions) is strongly
//    connected, i.e. no group of participants never lost (or never won) against the rest. The strongly
//    connected groups (SCCs, BtFit::group) tell which ratings are identified.
//  - Disconnected comparison graph: participants are split into connected components (i ~ j when they
//    played at least once). Strengths in different components are not comparable (the likelihood does
//    not depend on their offset), so each component is fitted on its own. A participant with no games
//    is its own component with score 0 (status no_games).
//  - The reference group R of a component: its largest strongly connected group with at least 2
//    members (ties: the one holding the lowest index). R's scores are the MLE of the games among its
//    members, centred to mean 0 over R. For a strongly connected component R is the whole component
//    and this is the plain MLE. For a separable one it is the limit of the likelihood's maximisers as
//    the separated groups move off to infinity (those games are then won with probability 1), so it
//    does not depend on the iteration cap.
//  - Everyone else in the component keeps the value where the reference's MM fit of the component
//    stopped (the iteration cap: its MLE is infinite relative to R), shifted so that R's members
//    average 0 there too; only its order is meaningful. A component without R (every group a single
//    participant) keeps the MM values centred over the component.
//  - The main component is the one with the largest R (then: any R; then the lowest index). Only its R
//    is identified; participants of other components share no scale with it and are marked apart.
//    BtFit::status says which case each participant is (BtStatus below).
//  - All draws: every p stays 1 (W_i equals the denominator exactly); scores 0, converged at once.
//  - MM steps as the reference: zero wins or a zero denominator leaves p_i unchanged; normalisation then
//    pushes it down a little each iteration (a participant with no losses drifts up likewise), so the
//    full fit of separable data runs to the cap and BtFit::converged is false.
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

/// What a participant's score means (see the file comment), relative to the reference group R of the
/// main component (the one holding the largest strongly connected group). In a component without R,
/// above = its group never lost to anyone outside it, below = never beat anyone outside it.
enum class BtStatus {
  identified,  // in R; R's fit reached the tolerance: a finite MLE
  capped,      // in R, but R's fit hit the iteration cap before the tolerance: close to the MLE
  above,       // R's side never beat it (directly or through others) while it beat R's side: MLE +inf
  below,       // it never beat R's side (directly or through others) while R beat it: MLE -inf
  between,     // its component has no R (every strongly connected group is one participant, e.g. A
               // beat B, B beat C): it beat some and lost to others outside its group; unbounded
  apart,       // not comparable with R: another component, or unbounded both ways relative to R
  no_games,    // played no game: 0 by convention
};
/// "identified", "capped", "above", "below", "between", "apart", "no_games".
const char* bt_status_name(BtStatus s);
/// Parses bt_status_name()'s strings; throws spade::Error naming `where` otherwise.
BtStatus parse_bt_status(const std::string& s, const std::string& where);
/// True for identified and capped (a finite MLE exists).
inline bool bt_finite(BtStatus s) { return s == BtStatus::identified || s == BtStatus::capped; }
/// One sentence for reports: what the score of a participant with status `s` means.
std::string bt_status_meaning(BtStatus s);

/// Result of one fit.
struct BtFit {
  std::vector<double> scores;  // log-strengths beta_i (natural log); mean 0 over each reference group
  std::vector<int> component;  // connected component of each participant, 0..components-1
  int components = 0;
  std::vector<int> group;      // strongly connected group of the win graph, 0..groups-1
  int groups = 0;
  std::vector<BtStatus> status;  // per participant (see BtStatus)
  int iterations = 0;          // iterations of the full MM fit
  bool converged = false;      // the full MM fit reached the tolerance (false for separable data)
};

/// Fits Bradley-Terry by MM and classifies every score (see the file comment). Never throws for any
/// counts (no NaN, no inf).
BtFit fit_bradley_terry(const PairwiseCounts& counts, const BtOptions& options = {});

/// Standard competition ranks ("1, 1, 3") by score descending: rank[i] = 1 + the number of scores
/// strictly greater than i's, where scores within kRankTieTolerance of their neighbour in sorted order
/// are one tie. Why competition ranking and not ties by id (the reference) or dense ranking: equal
/// scores are equal evidence, so they must share a rank, and a rank should still say how many
/// participants did better (rank 3 after a tie for 1st), which is what bootstrap rank intervals and
/// histograms count.
std::vector<int> rank_by_score(const std::vector<double>& scores);
/// Scores closer than this are tied (MM on symmetric data agrees to rounding, ~1e-15).
constexpr double kRankTieTolerance = 1e-9;

}  // namespace spade::evaldual
