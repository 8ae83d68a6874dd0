// The agent of a `checkpoint:DIR` SWE-Duel participant (issue 20): the checkpoint plays in this process
// through serve's engine (serve/local_chat.h), every session of the participant sharing one loaded
// model and its running batch. Lives in apps/ because it joins evaldual's Agent interface to serve's
// engine, and neither library depends on the other (DESIGN.md, dependencies).
//
// Sampling: the reference's defaults (policy/sampling_defaults.h: temperature 0.6, top-p 0.95, top-k
// 20) unless set. Each query's seed is fnv1a64(session key) + the query's index in its session (+
// options.seed), so a replayed match samples the same replies whatever the worker count.
// Usage (calls, prompt and completion tokens) is counted for the duel's tokens accounting; cost is 0
// (no provider).
//
// Thread-safety: open_session() and totals() are thread-safe; each Policy belongs to one session.
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "evaldual/protocol.h"
#include "policy/sampling_defaults.h"

namespace spade::serve {
class LocalChat;
}

namespace spade::apps {

struct CheckpointAgentOptions {
  std::string device = "cpu";     // torch device of the model
  std::string dtype = "float32";  // float32 | bfloat16
  int max_batch = 8;              // sessions decoding together (a match's workers share it)
  int max_new_tokens = 1024;      // per reply
  double temperature = policy::sampling_defaults::kTemperature;
  double top_p = policy::sampling_defaults::kTopP;
  int top_k = policy::sampling_defaults::kTopK;
  uint64_t seed = 0;
};

struct CheckpointUsage {
  int64_t calls = 0, prompt_tokens = 0, completion_tokens = 0, dropped_tokens = 0;
};

class CheckpointAgent : public evaldual::Agent {
 public:
  /// The agent of `dir` (an HF checkpoint with a chat template), loaded at the first session, so that
  /// the incumbents an entry never plays are never loaded. Throws spade::Error naming the directory
  /// (here when dir/config.json is missing; from open_session() when the checkpoint does not load).
  CheckpointAgent(const std::string& dir, const CheckpointAgentOptions& options);
  ~CheckpointAgent() override;
  std::unique_ptr<evaldual::Policy> open_session(const evaldual::SessionContext& ctx) override;
  CheckpointUsage totals() const;

  struct Counters {
    std::atomic<int64_t> calls{0}, prompt_tokens{0}, completion_tokens{0}, dropped_tokens{0};
  };

 private:
  std::shared_ptr<serve::LocalChat> loaded();
  std::string dir_;
  std::mutex mu_;
  std::shared_ptr<serve::LocalChat> chat_;  // guarded by mu_; null until the first session
  CheckpointAgentOptions options_;
  std::shared_ptr<Counters> counters_;
};

/// The directory of a `checkpoint:DIR` participant id; "" for any other id.
std::string checkpoint_dir_of(const std::string& participant);

}  // namespace spade::apps
