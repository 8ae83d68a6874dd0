#include "rollout/designer.h"

#include "common/strings.h"
#include "rollout/parsing.h"
#include "rollout/prompts.h"

namespace spade::rollout {

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
  params.stop_token_ids = {policy.chat.eos_id()};
  std::vector<GenerationResult> gens = generate(policy.model, prompts, params, seed, max_batch);
  for (size_t i = 0; i < chats.size(); ++i) {
    out[i].output = std::move(gens[i]);
    std::vector<int64_t> ids = out[i].output.tokens;
    if (out[i].output.finish_reason == "stop" && !ids.empty()) ids.pop_back();
    out[i].text = policy.tokenizer.decode(ids);
    out[i].temperature = params.temperature > 0 ? params.temperature : 1.0;
  }
  return out;
}

std::vector<DesignAttempt> design_environments(PolicyRef policy, envsandbox::EnvServer& server,
                                               const std::vector<std::string>& slot_skills,
                                               const DesignerPromptFn& make_prompt,
                                               const DesignerOptions& options, uint64_t seed) {
  std::vector<DesignAttempt> attempts;
  std::vector<int> pending;
  for (int s = 0; s < static_cast<int>(slot_skills.size()); ++s) pending.push_back(s);

  for (int attempt = 0; attempt < options.max_attempts && !pending.empty(); ++attempt) {
    std::vector<std::vector<policy::ChatMessage>> chats;
    std::vector<std::string> doc_ids(pending.size());
    for (size_t p = 0; p < pending.size(); ++p) {
      const std::string& skill = slot_skills[pending[p]];
      chats.push_back({{"system", designer_system_prompt()}, {"user", make_prompt(skill, &doc_ids[p])}});
    }
    std::vector<ChatCompletion> outs = complete_chats(
        policy, chats, options.sampling, seed + 7919ULL * static_cast<uint64_t>(attempt), options.max_batch);

    std::vector<int> still_pending;
    for (size_t p = 0; p < pending.size(); ++p) {
      DesignAttempt a;
      a.slot = pending[p];
      a.attempt = attempt;
      a.skill = slot_skills[a.slot];
      a.doc_id = doc_ids[p];
      a.sample = outs[p].to_sample(Role::Designer);
      a.sample.skill = a.skill;
      if (outs[p].output.finish_reason != "stop") {
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
          a.report = envsandbox::validate_game(server, a.code);
        }
      }
      if (!a.admitted()) still_pending.push_back(a.slot);
      attempts.push_back(std::move(a));
    }
    pending = std::move(still_pending);
  }
  return attempts;
}

std::vector<std::string> write_hints(PolicyRef policy, const std::vector<std::string>& programs,
                                     SamplingParams params, uint64_t seed, int max_batch) {
  std::vector<std::vector<policy::ChatMessage>> chats;
  for (const std::string& code : programs)
    chats.push_back({{"system", designer_system_prompt()}, {"user", hint_user_prompt(code)}});
  std::vector<ChatCompletion> outs = complete_chats(policy, chats, params, seed, max_batch);
  std::vector<std::string> hints;
  for (const ChatCompletion& c : outs)
    hints.push_back(c.output.finish_reason == "stop" ? trim(c.text) : std::string());
  return hints;
}

}  // namespace spade::rollout
