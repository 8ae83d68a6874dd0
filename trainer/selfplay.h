// The SPADE self-play loop (docs/design.md "One self-play step"; reference §1). One policy, two roles:
// the designer writes environments every k steps, the agent plays them every step, and one
// GRPO update trains both roles on a mixed batch (designer samples first). Data parallel: see
// selfplay_dp.h for what each rank does (designer rounds, hints, agent plays and the update split
// across ranks, files written by rank 0). Where each part lives: trainer/README.md. Not thread-safe.
//
// SelfPlay::step(t) is the list of phases, in docs/design.md's order, each returning a plain struct:
//   1. score the designer samples whose delay is over (selfplay.designer_delay, default k: the closing
//      generation's whole window; learner side, selfplay_learner.h); at a regeneration, close the
//      replaced generation's window (reward levels, its rollouts.h5 environment rows: generation_stats.h);
//   2. every k steps, a new generation and its hinted plays (rollout side, selfplay_rollout.cpp);
//   3. play the live environments (rollout side); on a regeneration step, the new generation's Vendi
//      score and formula-in-first-observation share (generation_stats.h);
//   4. score the plays: rewards, windows, regret, memory, advantages, filters (selfplay_bookkeeping.h);
//      the last step closes the live generation's window too;
//   5. train the mixed batch (learner side; a frozen designer, selfplay.designer_train: false, keeps
//      its scored samples out of it and logs them untrained);
//   6. held-out evaluation on schedule (eval.*, heldout_eval.h; rollout side, rank 0; also once before
//      the first step);
//   7. log one StepRecord (step_record.h): the metrics line, TensorBoard scalars and rollouts.h5 rows;
//   8. checkpoint on schedule.
#pragma once
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "envsandbox/sandbox.h"
#include "reward/learning_potential.h"
#include "rollout/designer.h"
#include "rollout/episode.h"
#include "rollout/policy_ref.h"
#include "rollout/prompts.h"
#include "rollout/sample.h"
#include "trainer/config.h"
#include "trainer/corpus.h"
#include "trainer/distributed.h"
#include "trainer/env_memory.h"
#include "trainer/env_pool.h"
#include "trainer/grpo_update.h"
#include "trainer/run_dir.h"
#include "trainer/seed_envs.h"
#include "trainer/selfplay_state.h"
#include "trainer/rollout_log.h"
#include "trainer/tb_writer.h"
#include "trainer/selfplay_bookkeeping.h"
#include "trainer/selfplay_learner.h"
#include "trainer/step_record.h"

namespace spade::trainer {

/// The bookkeeping's view of played episodes (selfplay_bookkeeping.h), in order: env id, reward,
/// truncated, a sandbox call past its deadline (EpisodeResult::process kTimeout), turns, sampled tokens.
std::vector<PlayOutcome> play_outcomes(const std::vector<rollout::EpisodeResult>& plays);

class SelfPlay {
 public:
  /// `seeds` are used only when selfplay.fill_with_seeds is set, or as the pool of selfplay.mode
  /// fixed_pool when selfplay.pool_dir is empty. All references (and `dist`, when given) must outlive
  /// this. `dist`: this rank's data-parallel context; null = a single process.
  /// Every rank must hold the same weights and optimizer state (train.cpp broadcasts rank 0's).
  /// `kl_reference`: the frozen reference policy, required when loss.kl_coef != 0 (else unused).
  /// `tb`: the run's TensorBoard writer (rank 0; outlives this); null: one is opened in run.tb_dir().
  SelfPlay(const Config& config, const RunDir& run, rollout::PolicyRef policy,
           envsandbox::EnvServer& server, Corpus& corpus, const std::vector<SeedEnv>& seeds,
           torch::optim::Optimizer& optimizer, std::function<void(const std::string&)> log,
           const DistributedContext* dist = nullptr, policy::Transformer kl_reference = nullptr,
           TbWriter* tb = nullptr);

  /// Runs rollouts [first, config.selfplay.steps); writes metrics, envs/, rejected/, memory.json,
  /// checkpoints (policy + trainer state every checkpoint.every steps and after the last step).
  /// Returns the summary (totals since step 0 when resumed).
  ///
  /// Step numbers: rollout t (0-based, internal) is step t + 1 wherever a step is shown: the
  /// console line "step n/N", metrics.jsonl and TensorBoard "step", rollouts.h5 step / rollout_id /
  /// born, envs/ names (game_NNNNN_...), memory.json rollout_id, and checkpoints/step_NNNNNN, which
  /// holds the weights after step n. So the metrics line of step n and checkpoint step_n belong together.
  SelfPlaySummary run(int64_t first = 0);

  /// Restores the loop from a checkpoint written by this class (checkpointing.h): optimizer, torch
  /// RNG, loop RNG, corpus position, live environments, designer buffer, memory (also rewritten to
  /// memory.json), skill EMAs, summary. The policy weights must already be loaded from the same
  /// checkpoint. Returns the step to pass to run(). Throws spade::Error on a malformed checkpoint.
  int64_t resume(const std::string& checkpoint_dir);

  /// The loop state to save before running step `next_step` (used by checkpoints; exposed for tests).
  SelfPlayState snapshot(int64_t next_step) const;

 private:
  /// A regeneration's outcome: what the step record logs and the hinted plays (logged, not trained).
  struct Generation {
    GenerationRecord record;
    std::vector<rollout::EpisodeResult> hinted;
  };

  /// One rollout t: the phases above, top to bottom.
  void step(int64_t t);

  // Rollout side (selfplay_rollout.cpp): the only code that touches the EnvServer, the corpus, the
  // designer, hints and episodes.
  /// Every rank: a new generation (designer, gates, seed fill-ins), its hints and hinted plays (r_hint),
  /// the work split across ranks (selfplay_dp.h); rank 0's generation is the authority; files by rank 0.
  Generation new_generation(int64_t t);
  /// selfplay.mode fixed_pool: a generation of envs_per_regen programs drawn from pool_ (env_pool.h);
  /// no designer, hints or hinted plays.
  Generation pool_generation(int64_t t);
  /// The designer's attempts for the slots of `slot_skills` (fresh corpus document per attempt).
  std::vector<rollout::DesignAttempt> design(int64_t t, const std::vector<std::string>& slot_skills);
  /// Saves every attempt (envs/ or rejected/), admits the valid ones into live_ (their designer samples
  /// into designer_buffer_) and counts them; fills `g` (attempts, admitted, rejections, seed copies).
  void admit(int64_t t, std::vector<rollout::DesignAttempt>& attempts, GenerationRecord& g);
  void fill_empty_slots(int64_t t, const std::vector<std::string>& slot_skills,
                        const std::vector<rollout::DesignAttempt>& attempts);
  /// Hints for the live generation (paper §4.2), saved as envs/<id>.hint.txt.
  void write_hints();
  /// Held-out evaluation (eval.*) of the current policy on rank 0: eval/<set>/... metrics; empty on the
  /// other ranks and when eval.every is 0.
  std::map<std::string, double> evaluate_heldout();
  /// The hinted plays of the live generation, split by environment across ranks.
  std::vector<rollout::EpisodeResult> play_hinted();
  /// Every live environment played plays_per_env times without the hint (split by environment).
  std::vector<rollout::EpisodeResult> play_live(int64_t t);

  // Bookkeeping and learner side.
  /// Scores the buffered designer samples of the live generation over its window; empties the buffer.
  DesignerBatch close_designer_window();
  /// This step's plays: windows, r_nohint, regret and memory (regeneration), advantages and
  /// rollout ids set on the samples, the filters.
  AgentScores score_plays(int64_t t, bool regeneration, std::vector<rollout::EpisodeResult>& plays);
  /// rollouts.h5 rows, metrics.jsonl, TensorBoard and the console line of `record` (rank 0).
  void log_step(StepRecord& record, std::chrono::steady_clock::time_point step_start, c10::Device device);
  /// Policy and trainer state every checkpoint.every steps and after the last step (rank 0).
  void checkpoint_on_schedule(int64_t t);

  /// Sets the loop state (not weights or optimizer) from `s`: resume and the data-parallel sync.
  void restore(SelfPlayState s);

  const Config& config_;
  const RunDir& run_;
  rollout::PolicyRef policy_;
  envsandbox::EnvServer& server_;
  Corpus& corpus_;
  const std::vector<SeedEnv>& seeds_;
  torch::optim::Optimizer& optimizer_;
  std::function<void(const std::string&)> log_;
  const DistributedContext* dist_;              // never null (a world-size-1 context by default)
  policy::Transformer kl_reference_;            // frozen; set iff loss.kl_coef != 0

  std::vector<LiveEnv> live_;                   // the current generation
  std::vector<rollout::Sample> designer_buffer_;  // designer samples of live_, trained at t + k
  EnvMemory memory_;
  reward::LearningPotentialTracker skill_ema_;
  std::mt19937_64 rng_;
  SelfPlaySummary summary_;
  TbWriter* tb_ = nullptr;                      // runs/<name>/tb/: the metrics.jsonl scalars (rank 0)
  std::unique_ptr<TbWriter> own_tb_;            // tb_ when none was given
  std::unique_ptr<RolloutLog> rollouts_;        // runs/<name>/rollouts.h5: every episode (rank 0)
  double valid_rate_ = 0;                      // admitted share of the live generation's design round
  std::vector<std::pair<std::string, std::vector<SeedEnv>>> eval_sets_;  // eval.sets: folder name, games (rank 0)
  SelfPlayMode mode_ = SelfPlayMode::kSelfPlay;  // selfplay.mode
  rollout::Setting setting_ = rollout::Setting::kGames;  // selfplay.setting
  std::vector<SeedEnv> pool_;                   // fixed_pool: selfplay.pool_dir (else the seeds)
};

}  // namespace spade::trainer
