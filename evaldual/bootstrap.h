// Bootstrap confidence intervals and rank distributions for Bradley-Terry ratings (paper §3.5: "rank
// probability distributions and 95% confidence intervals using 1,000 bootstrap resamples of matches";
// reference §6 "Bootstrap").
//
// Procedure (each draw b = 0..samples-1, in order, from one random stream):
//   1. resample the M comparisons with replacement: M indices, each bounded_index(engine, M);
//   2. fit Bradley-Terry (bradley_terry.h) on the resampled comparisons;
//   3. rank participants (score descending, standard competition ranks: rank_by_score);
//   4. optionally replay Elo (elo.h) over the resampled comparisons in their original (time) order.
// Then per participant: score CI = 2.5th and 97.5th percentiles of its log-strength over draws
// (percentile(): linear interpolation between order statistics, numpy's default); rank histogram
// (draws per rank 1..n); median rank (the middle order statistic, or the mean of the two middle ones);
// rank interval = [floor(2.5th percentile), ceil(97.5th percentile)] of its rank; and the number of
// draws in which its rating had no finite MLE (status neither identified nor capped, bradley_terry.h):
// those draws contribute values at the iteration cap, so an interval with more than
// kUnidentifiedShare of its draws unidentified is not a confidence interval of a finite rating
// (ci_identified()).
// The stream is std::mt19937_64 seeded with `seed` (its output is fixed by the C++ standard, so results
// are identical on every platform; tests/evaldual/reference/bt_reference.py replays it in Python).
// Matches are resampled for the match-level ratings; the contested-turn BT resamples contested turns
// (rankings.h uses seed + 1 for that stream).
//
// Thread-safety: pure functions on plain values; thread-safe.
#pragma once
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "evaldual/bradley_terry.h"
#include "evaldual/elo.h"

namespace spade::evaldual {

/// Bootstrap settings. Defaults: reference §6 (1000 draws, fixed seed; the seed's value is ours).
struct BootstrapOptions {
  int samples = 1000;
  uint64_t seed = 42;
  BtOptions bt;
  bool elo = true;  // also collect Elo CIs
  EloOptions elo_options;
};

/// Per-participant bootstrap statistics (vectors indexed like `ids`).
struct BootstrapResult {
  int samples = 0;
  std::vector<double> score_low, score_high;     // 2.5 / 97.5 percentiles of the BT log-strength
  std::vector<double> median_rank;
  std::vector<int> rank_low, rank_high;          // rank interval (see the file comment)
  std::vector<std::vector<int>> rank_histogram;  // [i][r-1]: draws in which participant i had rank r
  std::vector<double> elo_low, elo_high;         // 2.5 / 97.5 percentiles of Elo; empty unless options.elo
  std::vector<int> unidentified_draws;           // [i]: draws in which i's BT rating had no finite MLE
  int unconverged = 0;                           // draws whose full BT fit hit the iteration cap
};

/// The share of unidentified draws above which an interval is marked not identified: 2.5%, the tail
/// mass each percentile bound of a 95% interval leaves out (fewer such draws can at most sit beyond
/// one bound).
constexpr double kUnidentifiedShare = 0.025;
/// Whether an interval over `samples` draws, `unidentified` of them without a finite MLE, is a valid
/// interval of a finite rating: unidentified <= kUnidentifiedShare * samples.
inline bool ci_identified(int unidentified, int samples) {
  return static_cast<double>(unidentified) <= kUnidentifiedShare * static_cast<double>(samples);
}

/// A uniform index in [0, n) from `engine`: draws x until x >= 2^64 mod n, returns x mod n (unbiased
/// rejection). Throws spade::Error when n == 0.
uint64_t bounded_index(std::mt19937_64& engine, uint64_t n);

/// The q-th quantile (q in [0, 1]) of ascending `sorted` by linear interpolation (numpy
/// percentile(..., method="linear")). Throws spade::Error when `sorted` is empty or q is outside [0, 1].
double percentile(const std::vector<double>& sorted, double q);

/// Runs the bootstrap over `ordered` comparisons among participants `ids` (indices into ids; time
/// order matters only for Elo). With no comparisons every draw ties all participants (all rank 1).
/// Returns samples == 0 and empty vectors when options.samples <= 0. Throws spade::Error on an index
/// outside ids.
BootstrapResult bootstrap_ratings(const std::vector<std::string>& ids, const std::vector<Comparison>& ordered,
                                  const BootstrapOptions& options = {});

}  // namespace spade::evaldual
