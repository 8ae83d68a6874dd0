// rollouts.h5: every episode of a run in HDF5 (issue 5, "Logs and data"; sandbox anchors (docs/sources.md)
// "HDF5 trajectories"): Minari-style names and attributes, token arrays ragged with int64 offsets,
// text as deflated uint8 bytes with int64 offsets (variable-length HDF5 strings do not compress).
//
// Layout (every dataset 1-D, chunked, extendible; ragged data D has D_offsets with N + 1 entries,
// row i spanning [D_offsets[i], D_offsets[i + 1])):
//   /                 attrs format = "spade-rollouts-4", role_names = "agent,designer,hint", total_episodes
//   /episodes/        one row per episode (agent plays, hinted plays, designer samples)
//     id int64                  episode id (row index since the start of the run)
//     step int64                the step whose update trained it, numbered from 1 as in metrics.jsonl
//                               (hinted plays: the step they ran at)
//     rollout_id int64          the step that produced it (designer samples: k steps before)
//     role uint8                0 agent, 1 designer, 2 hint
//     hinted uint8, trained uint8   a hinted play (never trained) / part of the optimizer batch
//     rewards float64, advantages float64
//     terminations uint8, truncations uint8, total_steps int32 (turns; Minari's total_steps)
//     env_source_hash uint64    FNV-1a 64 of the environment program (0 when unknown)
//     tokens int32 + tokens_offsets; loss_mask uint8, rollout_logprobs float32 and token_kinds uint8
//                               share tokens_offsets; token_kinds: 0 context, 1 sampled, 2 sampled in a
//                               response that calls tools, 3 a tool turn of results (Sample::tool_segments)
//     env_id uint8 + env_id_offsets; skill uint8 + skill_offsets     (UTF-8 text)
//   /environments/    one row per admitted environment (designed or seed), written when its window
//                     closes: at the regeneration that replaces its generation, or at the run's last step
//     born int64 (the step that admitted it), closed int64 (the step that wrote the row: its window is
//     steps born .. closed - 1, or born .. closed when closed is the run's last step), from_seed uint8,
//     source_hash uint64, window_plays int64 (no-hint plays over the window), win_rate float64 (the share
//     of them with reward > 0; NaN with none), regret float64 (hint regret r_hint - r_nohint at its
//     regeneration step; NaN in fixed_pool mode, which plays no hint), id/skill/source/hint uint8 text + *_offsets
//
// Rows are appended once per step; the file is opened and closed around each append, so between steps
// it is always a complete HDF5 file. Resume cuts episodes by `step` and environments by `closed`: a row
// is dropped exactly when the step that wrote it is redone. (A finished run resumed with more steps
// writes the generation live at its old last step a second time, when that generation's window
// really closes: the first row holds the window up to the old last step.) Not thread-safe; one
// writer per file.
// Format 4 added token_kinds to format 3 (environment rows at the window's close with closed,
// window_plays, win_rate and regret; format 2 wrote them at admission); a file of another format is
// refused by name.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "rollout/sample.h"

namespace spade::trainer {

/// One episode to log. `sample` must outlive the append call.
struct EpisodeRow {
  const rollout::Sample* sample = nullptr;
  int64_t step = 0;
  bool hinted = false, trained = true;
  bool terminated = false, truncated = false;
  int32_t turns = 0;
  uint64_t env_source_hash = 0;
};

/// One environment to log, when its window closes (trainer/generation_stats.h close_generation).
struct EnvironmentRow {
  std::string id, skill, source, hint;
  int64_t born = 0;
  bool from_seed = false;
  int64_t closed = 0;        // the step number of the append (the truncation key)
  int64_t window_plays = 0;  // no-hint plays over its window
  double win_rate = 0;       // plays with reward > 0 / window_plays (NaN with none)
  double regret = 0;         // hint regret (NaN where no hint was played: fixed_pool mode)
};

/// FNV-1a 64-bit hash of a program's text (the env_source_hash of rollouts.h5).
uint64_t source_hash(const std::string& source);

class RolloutLog {
 public:
  /// Uses `path`, creating the file with empty datasets when it does not exist. Throws spade::Error
  /// naming the path when it cannot be created or is not a rollouts file of this format.
  explicit RolloutLog(std::string path);

  /// Appends episodes and environments (either may be empty) in one open/close of the file.
  /// Throws spade::Error on an HDF5 failure.
  void append(const std::vector<EpisodeRow>& episodes, const std::vector<EnvironmentRow>& environments);

  /// Resume: drops the episode rows with step >= first_step and the environment rows with closed >=
  /// first_step (both are in step order). A file that HDF5 cannot open (torn by a kill during an append) is
  /// renamed to PATH.corrupt and a fresh file started; returns false in that case, true otherwise.
  bool truncate(int64_t first_step);

  int64_t num_episodes() const;  ///< rows in /episodes (opens the file)
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace spade::trainer
