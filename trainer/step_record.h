// One self-play step's record (docs/design.md "One self-play step", metric names of docs/design.md): what the
// phases of SelfPlay::step return, gathered in one plain struct that becomes the metrics.jsonl line,
// the TensorBoard scalars (step_metrics), the console line (console_line) and the rollouts.h5 rows
// (episodes, and the environments of the generations whose window closed). Torch-free plain data:
// thread-compatible.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "trainer/rollout_log.h"
#include "trainer/update_stats.h"

namespace spade::trainer {

/// A regeneration step's new generation (designer, gates, seed fill-ins, hints, hinted plays).
struct GenerationRecord {
  int64_t attempts = 0, admitted = 0;  // designer attempts and admitted programs
  double seed_copy_rate = 0;           // admitted programs that are verbatim seed programs / admitted
  int64_t from_seeds = 0;              // slots filled with a seed environment
  std::map<std::string, int64_t> rejected_by_reason;  // this regeneration's rejections
  std::map<std::string, int64_t> self_validation;     // tool use: self-validator verdicts (yes, no, failed_open)
  double hint_reward = 0;              // mean r_hint of the generation
  int64_t regen_tokens = 0;            // sampled designer, hint and hinted-play tokens
  double regen_s = 0;                  // wall time of the regeneration and hinted plays
  // Diversity and giveaways of the generation's measured environments (trainer/generation_stats.h:
  // the designed ones; in fixed_pool mode the drawn pool programs); unset when it has none.
  std::optional<double> vendi_score;           // designer/vendi_score over token 3-grams (common/code_ngrams.h)
  int64_t vendi_envs = 0;                      // the n of that score (designer/vendi_score_per_env = score / n)
  std::optional<double> formula_in_first_obs;  // share whose first observation states a formula
};

/// A generation whose window closed at this step (the regeneration that replaces it, or the run's
/// last step): what its plays over the window showed (trainer/generation_stats.h close_generation).
struct GenerationCloseRecord {
  // Mean over the measured environments of the distinct reward values of each one's window, and of
  // those strictly between 0 and 1 (SPADE App. I.1.1: graded vs binary rewards); unset when none.
  std::optional<double> reward_levels, partial_reward_levels;
  std::vector<EnvironmentRow> environments;  // rollouts.h5 rows of every environment of the generation
};

/// One scoring of buffered designer samples (the closing generation's, or the last step's flush).
struct DesignerScoringRecord {
  double blend = 0;                    // mean raw designer reward (designer/blend)
  double scale = 0;                    // designer reward scale S
  int64_t scored_samples = 0;          // designer samples scored (designer/scored_samples)
  int64_t trained_samples = 0;         // of them in the update: all, or 0 for a frozen designer
  std::map<std::string, double> lp_gap;  // per skill
};

/// Tool-use plays of a step (selfplay.setting tool_use): how many tool calls reached the environments.
struct ToolCallRecord {
  double calls_per_play = 0;       // no-hint plays: tool calls stepped / plays
  double plays_with_calls = 0;     // share of no-hint plays that made at least one call
  double malformed_share = 0;      // malformed calls / calls (0 with none)
  std::optional<double> hinted_calls_per_play;  // regeneration steps: the hinted plays' calls / plays
};

struct StepRecord {
  int64_t step = 0;                        // the step number (rollout t + 1, selfplay.h)
  std::optional<GenerationRecord> generation;  // set on regeneration steps
  std::vector<DesignerScoringRecord> designer_scorings;  // in order; the last one's values are logged
  std::vector<GenerationCloseRecord> closed_generations;  // in order; the last one's values are logged
  double window_blend = 0;                 // designer/blend when no designer sample is scored this step
  double valid_rate = 0, regret = 0;       // of the live generation
  int64_t live_envs = 0;
  // The agent plays (trainer/selfplay_bookkeeping.h AgentScores).
  double reward_mean = 0, success_rate = 0, turns_mean = 0, learnable_share = 0;
  double frac_zero_std = 0, truncated_frac = 0;
  int64_t agent_samples = 0, agent_filtered = 0, agent_tokens = 0;
  std::optional<ToolCallRecord> tool_calls;  // tool-use setting only
  // The update.
  int64_t designer_samples = 0;
  double lr = 0;
  UpdateStats update;
  bool log_kl = false;                     // loss.kl_coef != 0: actor/kl_loss is logged
  std::optional<double> mfu;               // train.peak_tflops set and the update took time
  // Time and memory.
  double rollout_s = 0, rollouts_h5_s = 0, step_s = 0, max_rss_gb = 0;
  std::optional<double> gpu_max_allocated_gb, gpu_max_reserved_gb;
  // rollouts.h5: every episode of the step (the trained batch, designer first, then the hinted plays;
  // the samples are owned by the step and outlive the append); environment rows: closed_generations.
  std::vector<EpisodeRow> episodes;
  // Held-out evaluation on its schedule (eval.*): eval/<set>/... metrics (heldout_eval.h eval_metrics).
  std::map<std::string, double> eval;
};

/// The metrics line of `r` (without "step"): docs/design.md's names; regeneration-only, designer-scoring
/// and optional keys appear only when `r` has them.
std::map<std::string, double> step_metrics(const StepRecord& r);

/// The console line "step n/N | reward ... | ... s" of `r` (`steps`: selfplay.steps). With `fixed_pool`
/// (selfplay.mode fixed_pool: no designer) the designer's fields (valid, regret, blend) are left out.
std::string console_line(const StepRecord& r, int steps, bool fixed_pool);

}  // namespace spade::trainer
