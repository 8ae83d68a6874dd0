// The run directory layout (docs/design.md, Contracts): runs/<name>/ with the resolved config,
// metrics.jsonl, warm_start.jsonl, summary.json, tb/ (TensorBoard), rollouts.h5, envs/, rejected/,
// memory.json and checkpoints/step_NNNNNN/. Opening one (new, resumed, replaced): run_open.h.
#pragma once
#include <map>
#include <string>

namespace spade::trainer {

struct RunDir {
  std::string root;

  std::string config_path() const { return root + "/config.yaml"; }
  std::string metrics_path() const { return root + "/metrics.jsonl"; }
  std::string envs_dir() const { return root + "/envs"; }
  std::string rejected_dir() const { return root + "/rejected"; }
  std::string memory_path() const { return root + "/memory.json"; }
  std::string checkpoints_dir() const { return root + "/checkpoints"; }
  std::string corpus_path() const { return root + "/corpus.jsonl"; }
  std::string tokenizer_prefix() const { return root + "/tokenizer"; }
  std::string tb_dir() const { return root + "/tb"; }                  // TensorBoard event files
  std::string rollouts_path() const { return root + "/rollouts.h5"; }  // every episode (HDF5)
  std::string warm_start_path() const { return root + "/warm_start.jsonl"; }  // the cold start, a line per step
  std::string summary_path() const { return root + "/summary.json"; }  // the run so far (train.h)
  /// checkpoints/step_NNNNNN (6 digits)
  std::string checkpoint_dir(int64_t step) const;

  /// Creates root and its subfolders. Throws spade::Error on failure.
  static RunDir create(const std::string& out_dir, const std::string& name);

  /// Appends one metrics line {"step": step, key: value...} to metrics.jsonl (non-finite -> null).
  void log_metrics(int64_t step, const std::map<std::string, double>& metrics) const;

  /// Appends the same line to another JSONL file (e.g. duel/metrics.jsonl).
  static void log_metrics_to(const std::string& path, int64_t step, const std::map<std::string, double>& metrics);

  /// Drops the metrics.jsonl lines whose "step" is >= first_step (and unparseable lines, e.g. one cut
  /// by a kill), rewriting the file atomically: a resumed run appends from first_step. No-op when
  /// the file does not exist. Throws spade::Error on I/O failure.
  void truncate_metrics(int64_t first_step) const;

  /// Removes all but the newest `keep` checkpoint directories, never one whose step is a multiple of
  /// `keep_every` (> 0; 0: none kept that way): the checkpoints duel scoring reads (config DuelYaml).
  void prune_checkpoints(int keep, int keep_every = 0) const;
};

}  // namespace spade::trainer
