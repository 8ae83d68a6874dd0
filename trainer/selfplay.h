// The SPADE self-play loop (DESIGN.md "One self-play step"; reference §1). One policy, two roles:
// the designer writes environments every k steps, the agent plays them every step, and one
// GRPO update trains both roles on a mixed batch (designer samples first). Not thread-safe.
#pragma once
#include <functional>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "envsandbox/sandbox.h"
#include "reward/learning_potential.h"
#include "rollout/designer.h"
#include "rollout/policy_ref.h"
#include "rollout/sample.h"
#include "trainer/config.h"
#include "trainer/corpus.h"
#include "trainer/env_memory.h"
#include "trainer/grpo_update.h"
#include "trainer/run_dir.h"
#include "trainer/seed_envs.h"
#include "trainer/config_bridge.h"

namespace spade::trainer {

/// An admitted environment in play. Each lives exactly k steps (reference §1).
struct LiveEnv {
  std::string id;          // "game_<t>_<i>_<skill>"
  std::string skill;
  std::string code;
  std::string path;        // envs/<id>.py
  std::string hint;        // "" when the hint failed
  int64_t born = 0;        // rollout id of its regeneration
  double r_hint = 0, r_nohint = 0, regret = 0;
  std::vector<double> window_rewards;  // every no-hint episode reward over its k-step window
  bool step_timeout = false;
  bool from_seed = false;  // a seed environment filling a slot the designer left empty
};

/// Totals over the run, for the closing summary.
struct SelfPlaySummary {
  int steps = 0;
  int64_t attempts = 0, admitted = 0, rejected = 0;
  std::map<std::string, int64_t> rejected_by_reason;
  double hint_success_sum = 0, nohint_success_sum = 0;  // over regeneration-step plays
  int64_t hint_plays = 0, nohint_plays = 0;
  double seconds = 0;
};

class SelfPlay {
 public:
  /// `seeds` are used only when selfplay.fill_with_seeds is set. All references must outlive this.
  SelfPlay(const Config& config, const RunDir& run, rollout::PolicyRef policy,
           envsandbox::EnvServer& server, Corpus& corpus, const std::vector<SeedEnv>& seeds,
           torch::optim::Optimizer& optimizer, std::function<void(const std::string&)> log);

  /// Runs steps [first, config.selfplay.steps); writes metrics, envs/, rejected/, memory.json,
  /// checkpoints. Returns the summary.
  SelfPlaySummary run(int64_t first = 0);

 private:
  /// One rollout t, top to bottom; returns the metrics line.
  std::map<std::string, double> step(int64_t t);
  void regenerate(int64_t t, std::map<std::string, double>& m);
  void fill_empty_slots(int64_t t, const std::vector<std::string>& slot_skills,
                        const std::vector<rollout::DesignAttempt>& attempts);
  /// Scores the buffered designer samples of the live generation over its window and empties the buffer.
  std::vector<rollout::Sample> delayed_designer_batch(std::map<std::string, double>& m);

  const Config& config_;
  const RunDir& run_;
  rollout::PolicyRef policy_;
  envsandbox::EnvServer& server_;
  Corpus& corpus_;
  const std::vector<SeedEnv>& seeds_;
  torch::optim::Optimizer& optimizer_;
  std::function<void(const std::string&)> log_;

  std::vector<LiveEnv> live_;                   // the current generation
  std::vector<rollout::Sample> designer_buffer_;  // designer samples of live_, trained at t + k
  EnvMemory memory_;
  reward::LearningPotentialTracker skill_ema_;
  std::mt19937_64 rng_;
  SelfPlaySummary summary_;
  double last_valid_rate_ = 0, last_regret_ = 0;
};

}  // namespace spade::trainer
