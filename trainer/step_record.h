// One self-play step's record (docs/design.md "One self-play step", metric names of docs/design.md): what the
// phases of SelfPlay::step return, gathered in one plain struct that becomes the metrics.jsonl line,
// the TensorBoard scalars (step_metrics), the console line (console_line) and the rollouts.h5 rows
// (episodes, new_environments). Torch-free plain data: thread-compatible.
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
  double hint_reward = 0;              // mean r_hint of the generation
  int64_t regen_tokens = 0;            // sampled designer, hint and hinted-play tokens
  double regen_s = 0;                  // wall time of the regeneration and hinted plays
};

/// One scoring of buffered designer samples (the closing generation's, or the last step's flush).
struct DesignerScoringRecord {
  double blend = 0;                    // mean raw designer reward (designer/blend)
  double scale = 0;                    // designer reward scale S
  int64_t scored_samples = 0;          // designer samples scored (designer/scored_samples)
  int64_t trained_samples = 0;         // of them in the update: all, or 0 for a frozen designer
  std::map<std::string, double> lp_gap;  // per skill
};

struct StepRecord {
  int64_t step = 0;                        // the step number (rollout t + 1, selfplay.h)
  std::optional<GenerationRecord> generation;  // set on regeneration steps
  std::vector<DesignerScoringRecord> designer_scorings;  // in order; the last one's values are logged
  double window_blend = 0;                 // designer/blend when no designer sample is scored this step
  double valid_rate = 0, regret = 0;       // of the live generation
  int64_t live_envs = 0;
  // The agent plays (trainer/selfplay_bookkeeping.h AgentScores).
  double reward_mean = 0, success_rate = 0, turns_mean = 0, learnable_share = 0;
  double frac_zero_std = 0, truncated_frac = 0;
  int64_t agent_samples = 0, agent_filtered = 0, agent_tokens = 0;
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
  // the samples are owned by the step and outlive the append) and, on a regeneration step, the new
  // generation's environments.
  std::vector<EpisodeRow> episodes;
  std::vector<EnvironmentRow> new_environments;
  // Held-out evaluation on its schedule (eval.*): eval/<set>/... metrics (heldout_eval.h eval_metrics).
  std::map<std::string, double> eval;
};

/// The metrics line of `r` (without "step"): docs/design.md's names; regeneration-only, designer-scoring
/// and optional keys appear only when `r` has them.
std::map<std::string, double> step_metrics(const StepRecord& r);

/// The console line "step n/N | reward ... | ... s" of `r` (`steps`: selfplay.steps).
std::string console_line(const StepRecord& r, int steps);

}  // namespace spade::trainer
