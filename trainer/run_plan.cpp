#include "trainer/run_plan.h"

#include <filesystem>
#include <nlohmann/json.hpp>

#include "common/atomic_file.h"
#include "common/error.h"
#include "policy/model_config.h"
#include "policy/tokenizer.h"
#include "trainer/config_model.h"

namespace spade::trainer {

RunPlan plan_run(const Config& c) {
  namespace fs = std::filesystem;
  RunPlan p;
  const SelfPlayConfig& sp = c.selfplay;
  p.run_dir = (fs::path(c.run.out_dir) / c.run.name).string();
  p.steps = sp.steps;
  p.regenerations = (sp.steps + sp.k - 1) / sp.k;
  p.envs_per_regen = sp.envs_per_regen;
  p.plays_per_step = int64_t{sp.envs_per_regen} * sp.plays_per_env;
  p.hint_plays_per_regen = int64_t{sp.envs_per_regen} * sp.hint_plays;
  p.agent_tokens_per_step = p.plays_per_step * sp.context_tokens;
  p.designer_tokens_per_regen = int64_t{sp.envs_per_regen} * sp.max_attempts * sp.designer.max_new_tokens;
  if (!c.model.init_checkpoint.empty()) {
    const std::string file = c.model.init_checkpoint + "/config.json";
    const policy::ModelConfig m = policy::ModelConfig::from_json(nlohmann::json::parse(read_file(file)), file);
    p.vocab_size = m.vocab_size;
    p.vocab_source = file;
    p.parameters = m.num_parameters();
    p.model_source = c.model.init_checkpoint;
    return p;
  }
  if (!c.tokenizer.path.empty()) {
    p.vocab_size = policy::Tokenizer::load(c.tokenizer.path).vocab_size();
    p.vocab_source = c.tokenizer.path;
  } else {
    p.vocab_size = c.tokenizer.vocab_size;
    p.vocab_source = "tokenizer.vocab_size (trained at the start of the run)";
  }
  p.parameters = model_config(c.model, p.vocab_size, /*eos_id=*/0, /*bos_id=*/-1).num_parameters();
  p.model_source = "model.* (random init)";
  return p;
}

std::string describe(const RunPlan& p, const Config& c) {
  const SelfPlayConfig& sp = c.selfplay;
  auto n = [](int64_t x) { return std::to_string(x); };
  std::string s;
  s += "run directory: " + p.run_dir + " (not created)\n";
  s += "cold start: " + std::string(c.warm_start.enabled ? "on" : "off") +
       (c.warm_start.enabled ? ", at most " + n(static_cast<int64_t>(c.warm_start.max_seconds)) + " s or " +
                                   n(c.warm_start.max_steps) + " steps"
                             : "") + "\n";
  s += "self-play steps: " + n(p.steps) + " (regenerate every k = " + n(sp.k) + ": " + n(p.regenerations) +
       " regenerations)\n";
  const bool pool = sp.mode == "fixed_pool";
  s += "environments per regeneration: " + n(p.envs_per_regen) +
       (pool ? " drawn from the pool\n" : " over " + n(sp.skills_per_regen) + " active skills\n");
  s += "plays per step: " + n(p.plays_per_step) + " (" + n(p.envs_per_regen) + " environments x " +
       n(sp.plays_per_env) + " plays)\n";
  if (!pool)
    s += "hinted plays per regeneration: " + n(p.hint_plays_per_regen) + " (" + n(p.envs_per_regen) + " x " +
         n(sp.hint_plays) + ")\n";
  s += "agent tokens per step: at most " + n(p.agent_tokens_per_step) + " (" + n(p.plays_per_step) + " plays x " +
       n(sp.context_tokens) + " context tokens)\n";
  if (!pool)
    s += "designer tokens per regeneration: at most " + n(p.designer_tokens_per_regen) + " (" +
         n(p.envs_per_regen) + " x " + n(sp.max_attempts) + " attempts x " + n(sp.designer.max_new_tokens) + ")\n";
  s += "model: " + p.model_source + ", " + n(p.parameters) + " parameters, vocabulary " + n(p.vocab_size) +
       " (" + p.vocab_source + ")\n";
  s += "train device: " + c.train.device + "\n";
  if (pool)
    s += "mode: fixed_pool: each generation draws " + n(c.selfplay.envs_per_regen) + " programs " +
         (c.selfplay.pool_replacement ? "with" : "without") + " replacement from " +
         (c.selfplay.pool_dir.empty() ? c.seed_envs.dir : c.selfplay.pool_dir) +
         "; no designer, hints or hinted plays\n";
  if (c.eval.every > 0) {
    std::string sets;
    for (const std::string& d : c.eval.sets) sets += (sets.empty() ? "" : ", ") + d;
    s += "held-out evaluation: before step 1, every " + n(c.eval.every) + " steps and after the last; " +
         n(c.eval.plays) + " plays per environment of " + sets + "\n";
  } else {
    s += "held-out evaluation: off (eval.every: 0)\n";
  }
  return s;
}

}  // namespace spade::trainer
