// Per-group statistics of one self-play step's agent plays: the optional batch filters (zero-variance
// groups, truncated episodes) and the learnable share of designed environments. Pure functions on
// plain values, torch-free; the self-play loop (selfplay.cpp steps 3, 5, 6) applies them.
//
// Sources: [anchors 2] trainer-anchors §2 in docs/sources.md "Optional filters: drop truncated
//          completions, drop zero-variance groups (dynamic sampling)"; [DAPO] Yu et al. 2025, "DAPO",
//          Sec. 3.2 dynamic sampling (verl's algorithm.filter_groups) and Sec. 3.4 overlong filtering;
//          [SPADE Fig. 8] the SPADE paper's learnability plot, "the fraction of generated environments
//          on which the Reasoning Agent wins between 20% and 80% of the time" (docs/design.md metric
//          designer/learnable_share).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "rollout/sample.h"

namespace spade::trainer {

/// Which agent plays leave the optimizer batch (config reward.filter_zero_std_groups and
/// reward.mask_truncated). Both default off: SPADE trains every play (reference §5).
struct BatchFilterOptions {
  bool filter_zero_std_groups = false;  // drop every play of a group whose rewards are all equal
  bool mask_truncated = false;          // drop every play whose episode was truncated
};

/// What the filters decided, aligned with the plays given to filter_agent_plays.
struct BatchFilterResult {
  std::vector<bool> keep;          // keep[i]: play i stays in the optimizer batch
  std::vector<size_t> kept;        // indices i with keep[i], increasing
  int64_t groups = 0;              // distinct group ids among the plays
  int64_t zero_std_groups = 0;     // groups whose rewards are all equal (size-1 groups included)
  int64_t plays = 0;               // number of plays
  int64_t truncated_plays = 0;     // plays with truncated set
  int64_t dropped = 0;             // plays left out (plays - kept.size())

  /// zero_std_groups / groups; 0 with no group. Logged as reward/frac_reward_zero_std.
  double frac_zero_std() const;
  /// truncated_plays / plays; 0 with no play. Logged as episode/truncated_frac.
  double truncated_frac() const;
};

/// Decides which agent plays of one step stay in the optimizer batch. Plays sharing a group id form
/// one group (one environment's plays at this step). A group is "zero-std" when all its rewards are
/// exactly equal, which is exactly when reward::group_advantages gives it all-zero advantages (it
/// carries no policy gradient but would still count in the seq-mean normalisers, diluting the rest).
/// A group of one play counts as zero-std (its advantage is 0 too; verl's filter_groups keeps such
/// groups, but there they have a nonzero raw-reward advantage).
///   - options.filter_zero_std_groups: every play of a zero-std group is dropped [DAPO dynamic
///     sampling, without the resampling: the batch just gets smaller, like TRL's and slime's filters].
///   - options.mask_truncated: every play with truncated[i] is dropped [DAPO overlong filtering:
///     verl masks the whole response out of the loss; here the play leaves the batch entirely, so it
///     counts in no normaliser]. Group statistics (zero-std, advantages) still use every play.
/// A play is kept when no enabled filter drops it. The statistics (groups, zero_std_groups,
/// truncated_plays) are computed whatever the options, so they can always be logged.
/// Throws spade::Error when the three vectors differ in size.
BatchFilterResult filter_agent_plays(const std::vector<double>& rewards, const std::vector<std::string>& group_ids,
                                     const std::vector<bool>& truncated, const BatchFilterOptions& options);

/// A copy of the optimizer batch laid out as [designer samples (n_designer) | agent plays] in which
/// every agent play i with !keep[i] is replaced by an empty Sample (no tokens), so positions, and
/// with them batch_share's deal of whole groups (selfplay_dp.h), are unchanged. Designer samples are
/// always copied. Throws spade::Error when batch.size() != n_designer + keep.size().
std::vector<rollout::Sample> blank_dropped(const std::vector<rollout::Sample>& batch, size_t n_designer,
                                           const std::vector<bool>& keep);

/// Removes the samples without tokens (the blanks of blank_dropped, and failed episodes that have
/// none: grpo_update skips both anyway) keeping the order of the rest.
void remove_empty(std::vector<rollout::Sample>& samples);

/// Learnability band of [SPADE Fig. 8]: 20% to 80% wins, both ends included.
inline constexpr double kLearnableLow = 0.2, kLearnableHigh = 0.8;

/// designer/learnable_share [SPADE Fig. 8]: the fraction of `success_rates` (one per designed
/// environment: its share of won plays, wins / plays, in [0, 1]) that lie in [low, high], both ends
/// included; 0 when there is none. wins / plays is correctly rounded, so 1/5 and 4/5 compare equal to
/// the literals 0.2 and 0.8. Throws spade::Error when low > high.
double learnable_share(const std::vector<double>& success_rates, double low = kLearnableLow,
                       double high = kLearnableHigh);

}  // namespace spade::trainer
