// Paired comparison of two held-out evaluations (`spade eval compare BEFORE.json AFTER.json`): did
// training move success? Both files are `spade eval --json` outputs (trainer/heldout_eval.h
// SetEval::to_json, under {"checkpoint", "passes": [{"temperature", "sets": [...]}]}) of the same
// environments, played the same number of times on the same reset seeds. Passes are paired by
// temperature, sets by their name, environments by skill and name; anything in one file and not the
// other is an error, never dropped.
//
// Per pass and set, and per skill within it:
//   - before and after: wins / plays summed over the environments;
//   - the difference: the mean over environments of (after success - before success), success = wins /
//     plays of the environment. Every environment has the same plays in both files, so this equals
//     after success - before success of the summed counts;
//   - its 95% interval: a paired percentile bootstrap over environments (Efron & Tibshirani 1993,
//     ch. 13; common/stats.h bootstrap_mean_interval): resample the environments with replacement,
//     take the mean of their per-environment differences, 2.5% and 97.5% quantiles. Pairing keeps each
//     environment's before and after together, so the interval covers the variation between
//     environments of the change, not the spread of either evaluation alone;
//   - environments up / down / same: after wins >, < or == before wins.
// Torch-free; pure functions apart from compare_evaluation_files (reads files); thread-safe.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/stats.h"

namespace spade::trainer {

/// One `spade eval --json` output and the file it came from (named in every error).
struct EvalFile {
  std::string file;
  nlohmann::json json;
};

/// One environment in both evaluations.
struct EnvComparison {
  std::string skill, name;
  int plays = 0;                  // plays in each evaluation (the same in both)
  int before_wins = 0, after_wins = 0;
  double difference = 0;          // (after_wins - before_wins) / plays
};

/// A skill's environments, or all of a set's ("overall").
struct GroupComparison {
  std::string name;               // a skill slug, or "overall"
  int environments = 0;
  int plays = 0;                  // summed over the environments, the same in both evaluations
  int before_wins = 0, after_wins = 0;
  double before_success = 0, after_success = 0;  // wins / plays
  MeanInterval difference;        // mean over environments of after - before success, paired bootstrap 95%
  int up = 0, down = 0, same = 0; // environments whose wins rose, fell, stayed
};

/// One set of one pass in both evaluations.
struct SetComparison {
  std::string set;                // the set's name ("data/seed_envs")
  int plays = 0;                  // plays per environment
  std::string reset_seeds;        // "heldout" | "training"
  std::vector<EnvComparison> environments;  // in the before file's order
  GroupComparison overall;
  std::vector<GroupComparison> skills;      // sorted by skill slug
};

struct PassComparison {
  double temperature = 0;         // 0: greedy
  std::vector<SetComparison> sets;  // in the before file's order
};

struct EvalComparison {
  std::string before_file, after_file, before_checkpoint, after_checkpoint;
  int resamples = 0;
  uint64_t seed = 0;
  std::vector<PassComparison> passes;  // in the before file's order
  /// {"before", "after", "before_checkpoint", "after_checkpoint", "interval", "resamples", "seed",
  ///  "passes": [{"temperature", "sets": [{"set", "plays", "reset_seeds", "overall", "skills",
  ///  "environments"}]}]}; a group is {"name", "environments", "plays", "before": {"wins", "success"},
  ///  "after": {...}, "difference": {"mean", "ci95": [low, high]}, "up", "down", "same"}.
  nlohmann::json to_json() const;
};

/// The words every output uses for the interval.
inline constexpr const char* kComparisonInterval =
    "95% paired percentile bootstrap over environments: resample the environments with replacement, "
    "mean of (after - before success) per environment";

/// Pairs `before` and `after` (see the top of this file) and computes every difference with
/// `resamples` bootstrap resamples from `seed` (the same seed for every group). Throws spade::Error
/// naming the file(s) and what differs: a pass (temperature), set or environment in one file and not
/// the other, or twice in one file; different plays per environment (which environment, both counts)
/// or different reset seeds of a set (both names); a missing or mistyped field ("FILE: passes[1].
/// sets[0].environments[3]: \"wins\" ..."), wins outside 0..plays, plays < 1, an empty set or no
/// passes; and resamples < 1.
EvalComparison compare_evaluations(const EvalFile& before, const EvalFile& after, int resamples = 10000,
                                   uint64_t seed = 42);

/// Reads and parses both files, then compare_evaluations. Throws spade::Error naming the file when
/// it cannot be read or is not valid JSON (with the byte offset), and what compare_evaluations throws.
EvalComparison compare_evaluation_files(const std::string& before_path, const std::string& after_path,
                                        int resamples = 10000, uint64_t seed = 42);

/// The plain-text table: a header naming the files and the interval, then per pass and set
/// "overall: before 37/1152 = 3.2%, after 137/1152 = 11.9%, difference +8.7 pts [+3.3, +15.8] (paired
/// bootstrap over 36 environments, 10000 resamples), up 15 / down 0 / same 21" and one such line per
/// skill ("causal (6 environments): before ..."). Points are percentage points (100 x the difference of
/// success rates).
std::string format_eval_comparison(const EvalComparison& c);

}  // namespace spade::trainer
