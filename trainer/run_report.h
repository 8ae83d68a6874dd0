// Comparing training runs as a page people look at: `spade report RUN_DIR... --out FILE.html` (one
// self-contained HTML file, common/html.h: inline SVG, nothing fetched) plus a Markdown table.
// Read from each run directory: metrics.jsonl (one JSON object per step), summary.json (totals) and
// config.yaml's run name. Charts, one line per run, x = step, in two sections: agent and update
// (reward and success, losses, clip fractions, TIS, entropy, tokens/s) and designer (learnable share,
// valid rate, regret and blend, and per regeneration the seed-copy rate, the Vendi score of the
// admitted programs and Vendi / n, distinct and partial reward levels per environment, the share of
// first observations stating a formula: trainer/generation_stats.h); a metric no run logged is listed
// instead of drawn; and eval/<set>/success with its interval band when runs log
// eval/<set>/success_low / _high. Tables: per run the steps, wall time, designer totals with the
// rejection reasons, and the agent's success at regeneration steps with and without the hint, each
// with its 95% Wilson score interval (Wilson 1927) from summary.json's play counts.
// Pure functions apart from load_run_metrics (reads files); thread-safe.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

namespace spade::trainer {

/// What a report needs from one run directory.
struct RunMetrics {
  std::string name;                  // run.name from config.yaml, else the directory's name
  std::string dir;
  std::vector<nlohmann::json> steps;  // metrics.jsonl, in order
  nlohmann::json summary;             // summary.json; null when absent (a run that never finished a step)
};

/// Reads `run_dir`. Throws spade::Error naming the file (and line) when metrics.jsonl is missing or a
/// line is not a JSON object with a numeric "step".
RunMetrics load_run_metrics(const std::string& run_dir);

/// The page comparing `runs` (at least one).
std::string runs_report_html(const std::vector<RunMetrics>& runs);

/// The same tables in Markdown.
std::string runs_report_markdown(const std::vector<RunMetrics>& runs);

}  // namespace spade::trainer
