// `spade duel watch RUN_DIR`: scores a training run's checkpoints in SWE-Duel matches while it trains
// (issue 20; DESIGN.md step 5), as a process of its own so that no training step waits for a duel.
//
// The run's leaderboard is RUN_DIR/duel/leaderboard/ (evaldual/leaderboard_dir.h). Its first
// incumbents are duel.opponents, each entering with its own bank; then every checkpoint
// RUN_DIR/checkpoints/step_N with N a multiple of duel.every (the trainer never prunes those:
// trainer/run_dir.h) enters as "<run.name>@N" by the late-entrant protocol (apps/duel_board.h
// enter_leaderboard: its bank as Red, ceil(log2 M)+1 actively sampled matches clamped to [3, M], the
// leaderboard refit). After each entry one line {"step": N, "duel/bt", "duel/bt_ci_low",
// "duel/bt_ci_high", "duel/red_win_rate", "duel/blue_win_rate", "duel/admitted_tasks", "duel/match_s"}
// (evaldual/entry_metrics.h) is appended to RUN_DIR/duel/metrics.jsonl and to the watcher's own
// TensorBoard events file in RUN_DIR/tb/; `spade report` joins those lines to the step records.
// A checkpoint plays in this process (duel.device) or, with duel.serve, through a `spade serve` this
// process starts for it on a free loopback port.
//
// Resumable: killed at any point (kill -9 included), a new watcher skips entered participants, resumes
// an entry without replaying its finished Red attempts and matches, and writes each step's line once.
// Only one watcher works on a run at a time (the leaderboard's lock).
//
// Thread-safety: one call per process.
#pragma once
#include <cstdint>
#include <functional>
#include <string>

namespace spade::apps {

struct DuelWatchOptions {
  std::string run_dir;
  bool once = false;          // score the checkpoints present now, then return
  int64_t until_step = -1;    // >= 0: return once every scored step <= until_step is scored
  double poll_s = 5.0;        // seconds between looks for new checkpoints
  int attempts = 3;           // Red attempts per slot (protocol.h ProtocolConfig::attempts_per_slot)
  int workers = 5;            // turns played at once (duel_match.h MatchConfig::workers; reference: 5)
};

/// Runs the watcher (see the file comment); progress lines go to `log`. Returns the number of
/// checkpoints scored by this call. Throws spade::Error naming the file or key when RUN_DIR/config.yaml
/// has no duel section (duel.every 0), an opponent or checkpoint cannot be played, or the leaderboard is
/// held by another watcher.
int duel_watch(const DuelWatchOptions& options, const std::function<void(const std::string&)>& log);

/// The leaderboard directory of a run: RUN_DIR/duel/leaderboard.
std::string run_leaderboard_dir(const std::string& run_dir);

}  // namespace spade::apps
