#include "rollout/designer.h"

#include <chrono>

#include "common/error.h"
#include "common/strings.h"
#include "rollout/parsing.h"
#include "rollout/prompts.h"

namespace spade::rollout {

const char* self_validation_name(SelfValidation v) {
  switch (v) {
    case SelfValidation::kNotRun: return "not_run";
    case SelfValidation::kYes: return "yes";
    case SelfValidation::kNo: return "no";
    case SelfValidation::kFailedOpen: return "failed_open";
  }
  return "not_run";
}

void apply_self_validation(DesignAttempt& a, const ChatCompletion& judgement, double seconds) {
  const std::optional<bool> verdict =
      judgement.output.finish_reason == FinishReason::kStop ? self_validator_verdict(judgement.text) : std::nullopt;
  a.self_validation = !verdict ? SelfValidation::kFailedOpen : *verdict ? SelfValidation::kYes : SelfValidation::kNo;
  const std::string said = truncate_utf8(trim(judgement.text), 400);
  envsandbox::GateResult g;
  g.gate = "self_validator";
  g.seconds = seconds;
  g.verdict = a.self_validation == SelfValidation::kNo ? "fail" : "pass";
  g.reason = a.self_validation == SelfValidation::kNo ? "self_validator_rejected" : "ok";
  g.detail = a.self_validation == SelfValidation::kFailedOpen
                 ? "no \\boxed{yes} or \\boxed{no} verdict: admitted (the check fails open); the validator said: " + said
                 : "the validator said: " + said;
  a.report.gates.push_back(g);
  if (a.self_validation == SelfValidation::kNo) {
    a.report.admitted = false;
    a.report.reason = g.reason;
    a.report.detail = g.detail;
  }
}

namespace {

// The self-validator on every admitted attempt (DesignerOptions::self_validate), in one batch.
void self_validate(PolicyRef policy, std::vector<DesignAttempt>& attempts, const DesignerOptions& options,
                   uint64_t seed) {
  std::vector<DesignAttempt*> judged;
  std::vector<std::vector<policy::ChatMessage>> chats;
  for (DesignAttempt& a : attempts) {
    if (!a.admitted()) continue;
    judged.push_back(&a);
    chats.push_back({{"system", designer_system_prompt(setting_of_skill(a.skill))}, {"user", self_validator_prompt(a.code)}});
  }
  if (judged.empty()) return;
  const auto t0 = std::chrono::steady_clock::now();
  const std::vector<ChatCompletion> outs = complete_chats(policy, chats, options.validator_sampling, seed, options.max_batch);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / judged.size();
  for (size_t i = 0; i < judged.size(); ++i) apply_self_validation(*judged[i], outs[i], seconds);
}

}  // namespace

Sample ChatCompletion::to_sample(Role role) const {
  Sample s;
  s.role = role;
  s.append_context(prompt_ids);
  s.append_sampled(output.tokens, output.logprobs);
  s.temperature = temperature;
  return s;
}

std::vector<ChatCompletion> complete_chats(PolicyRef policy,
                                           const std::vector<std::vector<policy::ChatMessage>>& chats,
                                           SamplingParams params, uint64_t seed, int max_batch) {
  std::vector<ChatCompletion> out(chats.size());
  std::vector<std::vector<int64_t>> prompts;
  for (size_t i = 0; i < chats.size(); ++i) {
    out[i].prompt_ids = policy.chat.render(chats[i], /*add_generation_prompt=*/true);
    prompts.push_back(out[i].prompt_ids);
  }
  params.stop_token_ids = policy.stop_token_ids();  // the end of turn and every eos id of the checkpoint
  std::vector<GenerationResult> gens = generate(policy.model, prompts, params, seed, max_batch);
  for (size_t i = 0; i < chats.size(); ++i) {
    out[i].output = std::move(gens[i]);
    std::vector<int64_t> ids = out[i].output.tokens;
    if (out[i].output.finish_reason == FinishReason::kStop && !ids.empty()) ids.pop_back();
    out[i].text = policy.tokenizer.decode(ids);
    out[i].temperature = params.temperature > 0 ? params.temperature : 1.0;
  }
  return out;
}

std::vector<DesignAttempt> attempt_designs(PolicyRef policy, envsandbox::EnvServer& server,
                                           const std::vector<DesignRequest>& requests,
                                           const DesignerOptions& options, uint64_t seed) {
  std::vector<std::vector<policy::ChatMessage>> chats;
  for (const DesignRequest& r : requests) chats.push_back(r.chat);
  std::vector<ChatCompletion> outs = complete_chats(policy, chats, options.sampling, seed, options.max_batch);
  std::vector<DesignAttempt> attempts;
  for (size_t p = 0; p < requests.size(); ++p) {
    DesignAttempt a;
    a.slot = requests[p].slot;
    a.attempt = requests[p].attempt;
    a.skill = requests[p].skill;
    a.doc_id = requests[p].doc_id;
    a.sample = outs[p].to_sample(Role::Designer);
    a.sample.skill = a.skill;
    if (outs[p].output.finish_reason != FinishReason::kStop) {
      // The response hit its token cap: the program is cut off.
      a.code = extract_code(outs[p].text);
      a.report.admitted = false;
      a.report.reason = "truncated_response";
      a.report.detail = "the designer response reached max_new_tokens (" +
                        std::to_string(options.sampling.max_new_tokens) + ") before ending";
    } else {
      a.code = envsandbox::repair_fstring_braces(server, extract_code(outs[p].text));
      if (trim(a.code).empty()) {
        a.report.admitted = false;
        a.report.reason = "empty_program";
        a.report.detail = "no code in the designer response";
      } else {
        a.report = envsandbox::validate_game(server, a.code, options.validate);
      }
    }
    attempts.push_back(std::move(a));
  }
  if (options.self_validate) self_validate(policy, attempts, options, seed + 1);
  return attempts;
}

std::vector<DesignAttempt> design_environments(const std::vector<std::string>& slot_skills,
                                               const DesignerPromptFn& make_prompt, int max_attempts,
                                               uint64_t seed, const DesignRoundFn& run_round) {
  std::vector<DesignAttempt> attempts;
  std::vector<int> pending;
  for (int s = 0; s < static_cast<int>(slot_skills.size()); ++s) pending.push_back(s);

  for (int attempt = 0; attempt < max_attempts && !pending.empty(); ++attempt) {
    std::vector<DesignRequest> requests;
    for (int slot : pending) {
      DesignRequest r;
      r.slot = slot;
      r.attempt = attempt;
      r.skill = slot_skills[slot];
      r.chat = {{"system", designer_system_prompt(setting_of_skill(r.skill))}, {"user", make_prompt(r.skill, &r.doc_id)}};
      requests.push_back(std::move(r));
    }
    std::vector<DesignAttempt> round = run_round(requests, seed + 7919ULL * static_cast<uint64_t>(attempt));
    if (round.size() != requests.size())
      throw Error("design_environments: a round of " + std::to_string(requests.size()) + " requests returned " +
                  std::to_string(round.size()) + " attempts");
    pending.clear();
    for (DesignAttempt& a : round) {
      if (!a.admitted()) pending.push_back(a.slot);
      attempts.push_back(std::move(a));
    }
  }
  return attempts;
}

std::vector<DesignAttempt> design_environments(PolicyRef policy, envsandbox::EnvServer& server,
                                               const std::vector<std::string>& slot_skills,
                                               const DesignerPromptFn& make_prompt,
                                               const DesignerOptions& options, uint64_t seed) {
  return design_environments(slot_skills, make_prompt, options.max_attempts, seed,
                             [&](const std::vector<DesignRequest>& requests, uint64_t round_seed) {
                               return attempt_designs(policy, server, requests, options, round_seed);
                             });
}

std::vector<std::string> write_hints(PolicyRef policy, const std::vector<std::string>& programs,
                                     SamplingParams params, uint64_t seed, int max_batch, bool tool_use) {
  std::vector<std::vector<policy::ChatMessage>> chats;
  const std::string system = designer_system_prompt(tool_use ? Setting::kToolUse : Setting::kGames);
  for (const std::string& code : programs) chats.push_back({{"system", system}, {"user", hint_user_prompt(code, tool_use)}});
  std::vector<ChatCompletion> outs = complete_chats(policy, chats, params, seed, max_batch);
  std::vector<std::string> hints;
  for (const ChatCompletion& c : outs)
    hints.push_back(c.output.finish_reason == FinishReason::kStop ? trim(c.text) : std::string());
  return hints;
}

}  // namespace spade::rollout
