// The resumable state of the self-play loop (issue 5, "Checkpoints and resume"): everything besides
// the weights and the optimizer that the next step reads, as plain torch-free structs with an exact
// JSON round trip (doubles and floats are written with shortest round-trip digits, so a restored run
// continues bit for bit). Written into checkpoints/step_NNNNNN/trainer_state/ by checkpointing.h.
// Plain data: thread-compatible (no internal locking).
#pragma once
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "rollout/sample.h"

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

/// One skill's learning-potential EMA pair (reward::SkillEma), as saved.
struct SkillEmaState {
  bool initialised = false;
  double mu_fast = 0, mu_slow = 0;
};

/// Everything the self-play loop carries from one step to the next, except the policy weights,
/// the optimizer and the torch generator (saved beside it as torch archives).
struct SelfPlayState {
  int64_t next_step = 0;                          // the rollout id t the resumed loop runs first
  std::string rng;                                // std::mt19937_64 state (operator<< text)
  uint64_t corpus_position = 0;                   // Corpus::position(): documents drawn so far
  std::vector<LiveEnv> live;                      // the current generation, window rewards included
  std::vector<rollout::Sample> designer_buffer;   // designer samples of `live`, trained at t + k
  std::map<std::string, SkillEmaState> skill_ema; // per-skill EMAs (reward §5 variants)
  SelfPlaySummary summary;
  double last_valid_rate = 0, last_regret = 0;
  double lr = 0;                                  // the learning rate of the last step (logged, checked)
};

/// JSON forms (exact round trip). The *_from_json functions throw nlohmann::json::exception on a
/// missing key or a wrong type and spade::Error on an unknown role, unequal sample arrays or a wrong
/// format tag; callers wrap either with the file name.
nlohmann::json sample_to_json(const rollout::Sample& s);
rollout::Sample sample_from_json(const nlohmann::json& j);
nlohmann::json state_to_json(const SelfPlayState& s);
SelfPlayState state_from_json(const nlohmann::json& j);

}  // namespace spade::trainer
