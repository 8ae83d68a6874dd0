// The comparison table of `spade ablate`: one row per run (a base config and its variants), read from
// the runs' metrics.jsonl and summary.json (trainer/run_report.h RunMetrics). Per row: held-out success
// before (the step-0 eval line) and after (the last eval line) on each eval set with the 95% interval
// the run logged (eval/<set>/success_low / _high: a percentile bootstrap over environments,
// trainer/heldout_eval.h), the learnable share (mean of designer/learnable_share over steps), the
// designer's valid rate (mean of designer/valid_rate over regeneration steps, those that log
// designer/attempts), the hint regret (mean of designer/regret over steps) and the wall time
// (summary.json's wall_seconds: corpus, tokenizer, cold start, self-play and evaluation). A value a run did not log is null in JSON and "-" in
// Markdown. Pure functions; thread-safe.
#pragma once
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "trainer/run_report.h"

namespace spade::trainer {

/// A success rate with its 95% interval, as a run logged it.
struct RateInterval {
  double value = 0, low = 0, high = 0;
};

struct EvalBeforeAfter {
  std::optional<RateInterval> before, after;  // step 0 and the last eval line
  int64_t after_step = 0;
};

struct AblationRow {
  std::string variant;  // "base" or the overlay's file stem
  std::string run;      // run name
  int64_t steps = 0;    // self-play steps logged
  std::map<std::string, EvalBeforeAfter> eval;  // eval set name -> before/after
  std::optional<double> learnable_share, valid_rate, regret, wall_s;
};

/// The row of `run` named `variant`.
AblationRow ablation_row(const std::string& variant, const RunMetrics& run);

/// The table as Markdown (one column pair per eval set, in name order) and as JSON
/// ({"rows": [{variant, run, steps, eval: {set: {before: {success, low, high}, after: {...}}}, ...}]}).
std::string ablation_markdown(const std::vector<AblationRow>& rows);
nlohmann::json ablation_json(const std::vector<AblationRow>& rows);

}  // namespace spade::trainer
