// The Environment Designer role: prompt -> sampled program -> code extraction -> brace repair ->
// validation gates, with retries (reference §1, §2, §4), and the privileged hint writer (paper §4.2).
// Not thread-safe.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "envsandbox/repair.h"
#include "envsandbox/validate.h"
#include "rollout/policy_ref.h"
#include "rollout/sample.h"
#include "rollout/sampler.h"

namespace spade::rollout {

/// A chat prompt rendered and completed by the policy.
struct ChatCompletion {
  std::vector<int64_t> prompt_ids;
  GenerationResult output;
  std::string text;   // decoded output without the EOS token
  double temperature = 1.0;  // the temperature the output's logprobs were computed at (greedy: 1)
  /// The (prompt, response) as a training sample: prompt mask 0, response mask 1 with logprobs, and
  /// the sampling temperature so the trainer recomputes logprobs the same way.
  Sample to_sample(Role role) const;
};

/// Renders each message list with the generation prompt and samples one completion per prompt in
/// batches of `max_batch`. EOS is the chat template's end-of-turn token.
std::vector<ChatCompletion> complete_chats(PolicyRef policy,
                                           const std::vector<std::vector<policy::ChatMessage>>& chats,
                                           SamplingParams params, uint64_t seed, int max_batch);

/// One designer generation attempt and its verdict.
struct DesignAttempt {
  int slot = 0;           // which environment of this regeneration
  int attempt = 0;        // 0-based attempt number for this slot
  std::string skill;      // skill slug
  std::string doc_id;     // grounding corpus document
  std::string code;       // extracted (and brace-repaired) program
  envsandbox::ValidationReport report;
  Sample sample;          // designer prompt (mask 0) + response (mask 1, rollout logprobs)
  bool admitted() const { return report.admitted; }
};

struct DesignerOptions {
  SamplingParams sampling;
  int max_attempts = 5;     // reference §4: up to 5 attempts, fresh sample and document each time
  int max_batch = 64;
};

/// Builds the designer prompt for (skill slug); reports the grounding document id through doc_id.
/// Called once per attempt, so each attempt gets a fresh corpus document (reference §4).
using DesignerPromptFn = std::function<std::string(const std::string& skill, std::string* doc_id)>;

/// Generates one environment per entry of `slot_skills`, retrying rejected slots up to
/// max_attempts times; all attempts of a round are sampled in one batch. Returns every attempt in
/// order (admitted ones have report.admitted). A program that breaks the sandbox is a rejection.
std::vector<DesignAttempt> design_environments(PolicyRef policy, envsandbox::EnvServer& server,
                                               const std::vector<std::string>& slot_skills,
                                               const DesignerPromptFn& make_prompt,
                                               const DesignerOptions& options, uint64_t seed);

/// Writes one privileged hint per program (paper §4.2: the hint writer sees the code, the agent
/// never does). A failed hint (no end of turn, or empty) is "" (reference §5: r_hint = 0).
std::vector<std::string> write_hints(PolicyRef policy, const std::vector<std::string>& programs,
                                     SamplingParams params, uint64_t seed, int max_batch);

}  // namespace spade::rollout
