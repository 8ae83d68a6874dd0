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
  std::string text;   // decoded output without the stop (EOS) token
  double temperature = 1.0;  // the temperature the output's logprobs were computed at (greedy: 1)
  /// The (prompt, response) as a training sample: prompt mask 0, response mask 1 with logprobs, and
  /// the sampling temperature so the trainer recomputes logprobs the same way.
  Sample to_sample(Role role) const;
};

/// Renders each message list with the generation prompt and samples one completion per prompt in
/// batches of `max_batch`. A completion stops on PolicyRef::stop_token_ids() (the chat template's
/// end of turn and every eos id of the checkpoint); `text` leaves the stop id out.
std::vector<ChatCompletion> complete_chats(PolicyRef policy,
                                           const std::vector<std::vector<policy::ChatMessage>>& chats,
                                           SamplingParams params, uint64_t seed, int max_batch);

/// The self-validator's part in an attempt (SPADE App. F.2; tool use): not run (off, or the program
/// failed a gate first), yes (admitted), no (rejected: "self_validator_rejected"), or no verdict (no
/// \boxed{yes}/\boxed{no} in its first \boxed{}, or cut at its token cap): admitted, the check fails open.
enum class SelfValidation { kNotRun, kYes, kNo, kFailedOpen };
/// "not_run", "yes", "no", "failed_open".
const char* self_validation_name(SelfValidation v);

/// One designer generation attempt and its verdict.
struct DesignAttempt {
  int slot = 0;           // which environment of this regeneration
  int attempt = 0;        // 0-based attempt number for this slot
  std::string skill;      // skill slug
  std::string doc_id;     // grounding corpus document
  std::string code;       // extracted (and brace-repaired) program
  envsandbox::ValidationReport report;
  Sample sample;          // designer prompt (mask 0) + response (mask 1, rollout logprobs)
  SelfValidation self_validation = SelfValidation::kNotRun;
  bool admitted() const { return report.admitted; }
};

/// Applies the self-validator's `judgement` of an attempt that passed every gate: its first \boxed{}
/// (after </think>) read by self_validator_verdict; "yes" keeps it admitted, "no" rejects it with reason
/// "self_validator_rejected", no verdict or a judgement cut at its token cap (finish reason not
/// kStop) keeps it admitted (the check fails open). Sets a.self_validation and appends a gate
/// "self_validator" (`seconds`: its share of the batch's time) with the validator's words (400 bytes).
void apply_self_validation(DesignAttempt& a, const ChatCompletion& judgement, double seconds = 0);

struct DesignerOptions {
  SamplingParams sampling;
  int max_attempts = 5;     // reference §4: up to 5 attempts, fresh sample and document each time
  int max_batch = 64;
  /// The gates (envsandbox/validate.h); tool use sets validate.tool_use (and, at rollout 0,
  /// validate.deterministic_reset = false, as the reference).
  envsandbox::ValidateOptions validate;
  /// Tool use: after every gate passes, the policy judges the program (self_validator_prompt), sampled
  /// with `validator_sampling`; its first \boxed{} decides; no verdict admits (fails open). Its
  /// response is not trained.
  bool self_validate = false;
  SamplingParams validator_sampling;
};

/// Builds the designer prompt for (skill slug); reports the grounding document id through doc_id.
/// Called once per attempt, so each attempt gets a fresh corpus document (reference §4).
using DesignerPromptFn = std::function<std::string(const std::string& skill, std::string* doc_id)>;

/// One designer generation to sample and check: an attempt at a slot, with its chat (system + user).
struct DesignRequest {
  int slot = 0;
  int attempt = 0;
  std::string skill;   // skill slug
  std::string doc_id;  // grounding corpus document
  std::vector<policy::ChatMessage> chat;
};

/// Samples one response per request (batches of options.max_batch, sampling seed `seed`) and checks
/// it: code extraction, f-string brace repair, then the validation gates (envsandbox/validate.h,
/// options.validate) and, with options.self_validate, the self-validator on the admitted ones (one
/// batch, seed `seed` + 1; a "no" rejects with reason "self_validator_rejected", the verdict text in
/// the detail, and a gate "self_validator" is added to the report either way); a
/// response cut off at max_new_tokens is "truncated_response", one without code "empty_program".
/// Returns attempt i for request i. Throws only what the sampler or EnvServer::spawn throws.
std::vector<DesignAttempt> attempt_designs(PolicyRef policy, envsandbox::EnvServer& server,
                                           const std::vector<DesignRequest>& requests,
                                           const DesignerOptions& options, uint64_t seed);

/// How one round of requests is run and checked: attempt_designs in this process, or split across
/// data-parallel ranks (trainer/selfplay_dp.h). Must return attempt i for request i.
using DesignRoundFn = std::function<std::vector<DesignAttempt>(const std::vector<DesignRequest>&, uint64_t seed)>;

/// Generates one environment per entry of `slot_skills`, retrying rejected slots up to
/// `max_attempts` times (reference §4: 5); all attempts of a round are one call of `run_round`, with
/// seed + 7919 * attempt. Prompts are built here, in slot order, by `make_prompt`. Returns every
/// attempt in order (admitted ones have report.admitted).
std::vector<DesignAttempt> design_environments(const std::vector<std::string>& slot_skills,
                                               const DesignerPromptFn& make_prompt, int max_attempts,
                                               uint64_t seed, const DesignRoundFn& run_round);

/// The same in this process: each round is attempt_designs(policy, server, ..., options). A program
/// that breaks the sandbox is a rejection.
std::vector<DesignAttempt> design_environments(PolicyRef policy, envsandbox::EnvServer& server,
                                               const std::vector<std::string>& slot_skills,
                                               const DesignerPromptFn& make_prompt,
                                               const DesignerOptions& options, uint64_t seed);

/// Writes one privileged hint per program (paper §4.2: the hint writer sees the code, the agent
/// never does; tool use: a plan, hint_user_prompt). A failed hint (no end of turn, or empty) is ""
/// (reference §5: r_hint = 0).
std::vector<std::string> write_hints(PolicyRef policy, const std::vector<std::string>& programs,
                                     SamplingParams params, uint64_t seed, int max_batch, bool tool_use = false);

}  // namespace spade::rollout
