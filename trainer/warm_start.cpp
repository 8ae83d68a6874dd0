#include "trainer/warm_start.h"

#include <torch/torch.h>

#include <chrono>
#include <cmath>
#include <algorithm>
#include <cstdio>
#include <map>

#include "common/strings.h"
#include "rollout/agent_turn.h"
#include "rollout/prompts.h"
#include "trainer/autocast.h"
#include "trainer/grpo_update.h"

namespace spade::trainer {

rollout::Sample designer_example(const rollout::PolicyRef& policy, const SeedEnv& env,
                                 const std::optional<std::string>& doc, const std::string& reference,
                                 int max_turns) {
  std::vector<rollout::ReferenceEnv> refs;
  if (!reference.empty()) refs.push_back({reference, false, ""});
  const rollout::Skill& skill = rollout::skill_by_slug(env.skill);
  const rollout::Setting setting = rollout::setting_of_skill(env.skill);
  // Tool use: the prompt asks for the variant the seed program declares ("Variant: ..." in its header).
  const std::string user =
      setting == rollout::Setting::kToolUse
          ? rollout::designer_tool_user_prompt(skill, doc, refs, max_turns, rollout::declared_tooluse_variant(env.code))
          : rollout::designer_user_prompt(skill, doc, refs, max_turns);
  rollout::Sample s;
  s.role = rollout::Role::Designer;
  s.skill = env.skill;
  s.env_id = env.path;
  s.append_context(policy.chat.render({{"system", rollout::designer_system_prompt(setting)}, {"user", user}},
                                      /*add_generation_prompt=*/true));
  std::vector<int64_t> response = policy.tokenizer.encode("```python\n" + env.code + "```");
  response.push_back(policy.chat.eos_id());
  s.append_sampled(response, std::vector<float>(response.size(), 0.0f));
  return s;
}

rollout::Sample hint_example(const rollout::PolicyRef& policy, const SeedEnv& env) {
  rollout::Sample s;
  s.role = rollout::Role::Hint;
  s.skill = env.skill;
  s.env_id = env.path;
  const rollout::Setting setting = rollout::setting_of_skill(env.skill);
  s.append_context(policy.chat.render({{"system", rollout::designer_system_prompt(setting)},
                                       {"user", rollout::hint_user_prompt(env.code, setting == rollout::Setting::kToolUse)}},
                                      true));
  std::vector<int64_t> response = policy.tokenizer.encode(env.hint);
  response.push_back(policy.chat.eos_id());
  s.append_sampled(response, std::vector<float>(response.size(), 0.0f));
  return s;
}

std::vector<const SeedEnv*> designer_targets(const std::vector<SeedEnv>& seeds, int per_skill) {
  std::map<std::string, std::vector<const SeedEnv*>> by_skill;
  for (const SeedEnv& s : seeds) by_skill[s.skill].push_back(&s);
  std::vector<const SeedEnv*> out;
  for (auto& [skill, envs] : by_skill) {
    std::stable_sort(envs.begin(), envs.end(),
                     [](const SeedEnv* a, const SeedEnv* b) { return a->code.size() < b->code.size(); });
    const size_t n = per_skill > 0 ? std::min(envs.size(), static_cast<size_t>(per_skill)) : envs.size();
    out.insert(out.end(), envs.begin(), envs.begin() + n);
  }
  std::sort(out.begin(), out.end(), [](const SeedEnv* a, const SeedEnv* b) { return a->path < b->path; });
  return out;
}

std::vector<rollout::Sample> agent_demonstrations(const rollout::PolicyRef& policy,
                                                  envsandbox::EnvServer& server, const SeedEnv& env,
                                                  int n, int max_turns, int* dropped) {
  const bool tool_use = rollout::is_tooluse_skill(env.skill);
  const policy::ChatFormat format = policy.chat.format();
  std::vector<rollout::Sample> out;
  for (int seed = 0; seed < n; ++seed) {
    std::string reason;
    auto game = envsandbox::Game::open(server, env.code, max_turns, &reason);
    if (!game) break;
    std::optional<std::string> obs = game->reset(seed, &reason);
    if (!obs) break;
    std::vector<policy::ChatMessage> opening = {{"system", rollout::agent_system_prompt()},
                                                {"user", rollout::agent_first_turn(*obs)}};
    if (tool_use) {  // the tools through the chat template, as play_episodes opens a tool-use episode
      const std::optional<nlohmann::ordered_json> tools = game->tools(&reason);
      if (!tools) break;
      opening = policy::tool_use_opening(format, rollout::agent_tool_system_prompt(),
                                         rollout::agent_tool_first_turn(*obs, ""),
                                         std::vector<nlohmann::ordered_json>(tools->begin(), tools->end()));
    }
    std::vector<std::string> actions = game->solution(&reason);
    rollout::Sample s;
    s.role = rollout::Role::Agent;
    s.skill = env.skill;
    s.env_id = env.path;
    s.append_context(policy.chat.render(opening, true));
    bool won = false;
    for (const std::string& a : actions) {
      // Games: the answer boxed. Tool use: the solution's whole response; Llama 3.1 calls a tool with
      // the bare JSON object (rollout/tool_calls.h), so its <tool_call> tags are dropped there.
      std::string response = tool_use ? a : "\\boxed{" + a + "}";
      constexpr std::string_view kOpen = "<tool_call>", kClose = "</tool_call>";
      if (tool_use && format == policy::ChatFormat::kLlama3 && starts_with(response, kOpen) &&
          ends_with(response, kClose))
        response = response.substr(kOpen.size(), response.size() - kOpen.size() - kClose.size());
      std::vector<int64_t> ids = policy.tokenizer.encode(response);
      ids.push_back(policy.chat.eos_id());
      const int64_t begin = static_cast<int64_t>(s.tokens.size());
      s.append_sampled(ids, std::vector<float>(ids.size(), 0.0f));
      const rollout::ResponseStep rs = rollout::step_response(*game, format, response, tool_use);
      rollout::complete_turn(s, begin, policy.chat, ids.back(), response, rs);
      if (rs.ended()) {
        won = rs.step.won();
        break;
      }
    }
    if (won) {
      s.reward = 1.0;
      out.push_back(std::move(s));
    } else if (dropped) {
      ++*dropped;
    }
  }
  return out;
}

WarmStartStats run_warm_start(rollout::PolicyRef policy, envsandbox::EnvServer& server,
                              const std::vector<SeedEnv>& seeds, Corpus& corpus, const Config& config,
                              const std::function<void(const std::string&)>& log,
                              const std::function<void(const WarmStartStep&)>& on_step) {
  const WarmStartConfig& ws = config.warm_start;
  const auto start = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
  WarmStartStats stats;

  std::vector<rollout::Sample> demos;
  int dropped = 0;
  for (const SeedEnv& env : seeds) {
    auto d = agent_demonstrations(policy, server, env, ws.demos_per_env, config.selfplay.max_turns, &dropped);
    demos.insert(demos.end(), d.begin(), d.end());
  }
  char line[256];
  std::snprintf(line, sizeof line, "warm start: %zu agent demonstrations from %zu seed environments (%d dropped)",
                demos.size(), seeds.size(), dropped);
  log(line);

  const std::vector<const SeedEnv*> targets = designer_targets(seeds, ws.designer_seeds_per_skill);
  std::vector<const SeedEnv*> hinted;
  for (const SeedEnv& s : seeds)
    if (!s.hint.empty()) hinted.push_back(&s);
  std::snprintf(line, sizeof line, "warm start: %zu designer targets, %zu hint examples", targets.size(),
                hinted.size());
  log(line);

  std::mt19937_64 rng(config.run.seed ^ 0x5eedULL);
  torch::optim::AdamW optimizer(policy.model->parameters(),
                                torch::optim::AdamWOptions(ws.lr)
                                    .betas({config.optim.beta1, config.optim.beta2})
                                    .weight_decay(0.0)
                                    .eps(config.optim.adam_eps));
  std::uniform_real_distribution<double> coin(0.0, 1.0);
  std::uniform_int_distribution<size_t> pick_target(0, targets.size() - 1);
  std::uniform_int_distribution<size_t> pick_seed(0, seeds.size() - 1);
  policy.model->train();
  const torch::Device device = model_device(policy.model);
  const bool bf16 = parse_autocast(config.train.autocast);
  while (stats.steps < ws.max_steps && elapsed() < ws.max_seconds) {
    // Assemble one batch of about batch_tokens tokens.
    std::vector<rollout::Sample> batch;
    int64_t tokens = 0;
    while (tokens < ws.batch_tokens) {
      rollout::Sample s;
      const double u = coin(rng);
      if (!hinted.empty() && u >= ws.designer_fraction && u < ws.designer_fraction + ws.hint_fraction) {
        s = hint_example(policy, *hinted[std::uniform_int_distribution<size_t>(0, hinted.size() - 1)(rng)]);
        ++stats.hint_examples;
      } else if (demos.empty() || u < ws.designer_fraction) {
        const SeedEnv& env = *targets[pick_target(rng)];
        std::string reference;
        if (coin(rng) < ws.reference_fraction) {
          const SeedEnv& other = seeds[pick_seed(rng)];
          if (other.skill == env.skill && other.path != env.path) reference = other.code;
        }
        // corpus.enabled false: the cold start's designer prompts are ungrounded like self-play's.
        const std::optional<std::string> doc =
            config.corpus.enabled ? std::optional<std::string>(corpus.sample().text) : std::nullopt;
        s = designer_example(policy, env, doc, reference, config.selfplay.max_turns);
        ++stats.designer_examples;
      } else {
        std::uniform_int_distribution<size_t> pick(0, demos.size() - 1);
        s = demos[pick(rng)];
        ++stats.agent_examples;
      }
      tokens += static_cast<int64_t>(s.tokens.size());
      batch.push_back(std::move(s));
    }
    // Linear warmup, then cosine decay to 10% over the time box (or max_steps, whichever is nearer):
    // the last steps at a low rate settle the memorised programs. With run.deterministic the decay
    // follows max_steps alone: a rate read off the wall clock would make two runs of one config
    // differ (the time box still ends the cold start, so set max_steps below what it allows).
    const double step_progress = static_cast<double>(stats.steps) / ws.max_steps;
    const double progress =
        std::min(1.0, config.run.deterministic ? step_progress : std::max(elapsed() / ws.max_seconds, step_progress));
    const double decay = 0.1 + 0.9 * 0.5 * (1.0 + std::cos(M_PI * progress));
    const double lr = ws.lr * decay * std::min(1.0, (stats.steps + 1) / std::max(1.0, ws.warmup_steps));
    for (auto& group : optimizer.param_groups())
      static_cast<torch::optim::AdamWOptions&>(group.options()).lr(lr);

    std::vector<const rollout::Sample*> ptrs;
    double n_tokens = 0;
    for (const rollout::Sample& s : batch) {
      ptrs.push_back(&s);
      n_tokens += static_cast<double>(s.num_trainable());
    }
    optimizer.zero_grad();
    double loss_sum = 0;
    for (const PackedBatch& b : pack_micro_batches(ptrs, config.optim.micro_batch_tokens, device)) {
      torch::Tensor loss;
      {
        AutocastScope autocast(device, bf16);  // train.autocast, forward only (trainer/autocast.h)
        auto [logp, unused] = sequence_logprobs(policy.model, b, /*with_entropy=*/false);
        loss = -(logp * b.loss_mask).sum() / n_tokens;
      }
      loss.backward();
      loss_sum += loss.item<double>();
    }
    torch::nn::utils::clip_grad_norm_(policy.model->parameters(), config.optim.grad_clip);
    optimizer.step();
    if (stats.steps == 0) stats.first_loss = loss_sum;
    stats.last_loss = loss_sum;
    stats.tokens += tokens;
    ++stats.steps;
    if (on_step) on_step({stats.steps, loss_sum, lr, tokens, elapsed()});
    if (stats.steps % 10 == 0) {
      std::snprintf(line, sizeof line, "warm start step %4d  loss %.4f  lr %.2e  %.0f s", stats.steps,
                    loss_sum, lr, elapsed());
      log(line);
    }
  }
  stats.seconds = elapsed();
  stats.stopped_by = stats.steps >= ws.max_steps ? "max_steps" : "max_seconds";
  return stats;
}

}  // namespace spade::trainer
