#include "trainer/run_plan.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "common/atomic_file.h"
#include "common/error.h"
#include "policy/model_config.h"
#include "policy/model_shapes.h"
#include "policy/tokenizer.h"
#include "trainer/config_model.h"

namespace spade::trainer {

namespace {

// MemTotal of /proc/meminfo in bytes; 0 when unreadable.
int64_t host_memory_bytes() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  int64_t kib = 0;
  while (in >> key >> kib) {
    if (key == "MemTotal:") return kib * 1024;
    in.ignore(1 << 10, '\n');
  }
  return 0;
}

}  // namespace

RunPlan plan_run(const Config& c, const PlanMachine& machine) {
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
    p.model = policy::ModelConfig::from_json(nlohmann::json::parse(read_file(file)), file);
    p.vocab_source = file;
    p.model_source = c.model.init_checkpoint;
  } else if (!c.model.shape.empty()) {
    p.model = policy::checkpoint_shape(c.model.shape);
    p.vocab_source = "model.shape";
    p.model_source = "model.shape " + c.model.shape + " (model.init_checkpoint not set: `spade train` needs it)";
  } else {
    if (!c.tokenizer.path.empty()) {
      p.vocab_size = policy::Tokenizer::load(c.tokenizer.path).vocab_size();
      p.vocab_source = c.tokenizer.path;
    } else {
      p.vocab_size = c.tokenizer.vocab_size;
      p.vocab_source = "tokenizer.vocab_size (trained at the start of the run)";
    }
    p.model = model_config(c.model, p.vocab_size, /*eos_id=*/0, /*bos_id=*/-1);
    p.model_source = "model.* (random init)";
  }
  p.vocab_size = p.model.vocab_size;
  p.parameters = p.model.num_parameters();

  p.world_size = c.distributed.world_size > 0 ? c.distributed.world_size : std::max(1, machine.world_size);
  const bool cuda = c.train.device.rfind("cuda", 0) == 0 || (c.train.device == "auto" && machine.gpu_visible);
  p.memory = estimate_memory(p.model, c, p.world_size, cuda);
  char gb[64];
  if (cuda && machine.gpu_bytes > 0) {
    std::snprintf(gb, sizeof gb, "%.1f GiB", static_cast<double>(machine.gpu_bytes) / (1LL << 30));
    p.budget = {machine.gpu_bytes, machine.gpu_name + " total memory, " + gb};
  } else if (cuda) {
    std::snprintf(gb, sizeof gb, "%g", c.train.gpu_memory_gb);
    p.budget = {static_cast<int64_t>(c.train.gpu_memory_gb * (1LL << 30)),
                std::string("train.gpu_memory_gb = ") + gb + ": no GPU visible to this dry-run"};
  } else {
    p.budget = {host_memory_bytes(), "host memory, MemTotal"};
    if (p.budget.bytes == 0) p.budget.source = "host memory unknown (/proc/meminfo unreadable)";
  }
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
  if (p.model.num_experts > 0)
    s += "mixture of experts: " + n(p.model.num_experts) + " experts, top-" + n(p.model.num_experts_per_tok) +
         ": spade's qwen3_moe layer trains (policy/transformer.h), with every expert a separate matmul and the "
         "routing read on the host each forward (slow), no expert parallelism and no router load-balancing loss\n";
  s += "memory per GPU (estimate, trainer/memory_estimate.h; " +
       std::string(c.train.autocast == "bf16" ? "fp32 weights, bf16 autocast matmuls" : "fp32 throughout") +
       ", activation checkpointing " + (c.train.activation_checkpointing ? "on" : "off") + ", " + n(p.world_size) +
       " rank(s)):\n" + describe_memory(p.memory, p.budget);
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
