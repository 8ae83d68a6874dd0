// What a run config will do, resolved without doing any of it (`spade train --dry-run`, `spade config
// check`): the self-play schedule, the plays and tokens per step, the policy's size and its per-GPU
// memory (trainer/memory_estimate.h). Reads the tokenizer or the initial checkpoint's config.json when
// the config names one, and /proc/meminfo for a CPU run's fit; writes nothing. Without the
// checkpoint, a named model.shape gives the architecture. Torch-free; thread-safe.
#pragma once
#include <cstdint>
#include <string>

#include "policy/model_config.h"
#include "trainer/config.h"
#include "trainer/memory_estimate.h"

namespace spade::trainer {

struct RunPlan {
  std::string run_dir;               // <run.out_dir>/<run.name> (not created)
  int64_t steps = 0;                 // selfplay.steps
  int64_t regenerations = 0;         // ceil(steps / k): rounds of designer generation
  int64_t envs_per_regen = 0;        // selfplay.envs_per_regen over skills_per_regen active skills
  int64_t plays_per_step = 0;        // no-hint agent plays a step: envs_per_regen x plays_per_env
  int64_t hint_plays_per_regen = 0;  // hinted plays at each regeneration: envs_per_regen x hint_plays
  int64_t agent_tokens_per_step = 0;     // at most: plays_per_step x selfplay.context_tokens
  int64_t designer_tokens_per_regen = 0; // at most: envs_per_regen x max_attempts x designer.max_new_tokens
  int64_t vocab_size = 0;
  std::string vocab_source;          // "tokenizer.vocab_size (trained at the start)", a path, ...
  int64_t parameters = 0;            // the policy's parameter count
  std::string model_source;          // "model.* (random init)", model.init_checkpoint or model.shape
  policy::ModelConfig model;         // the architecture the counts come from
  int world_size = 1;                // distributed.world_size, else the launcher's, else 1
  MemoryEstimate memory;             // per GPU (rank)
  MemoryBudget budget;               // what `memory` is checked against
};

/// What the dry-run sees of the machine (apps fills it; tests pass their own).
struct PlanMachine {
  int world_size = 0;         // the launcher's WORLD_SIZE; 0: not launched
  bool gpu_visible = false;   // a CUDA device is visible (train.device auto then trains on it)
  int64_t gpu_bytes = 0;      // that GPU's total memory; 0: unknown (train.gpu_memory_gb is used)
  std::string gpu_name;       // e.g. "cuda:0"
};

/// Resolves `config` (already loaded and checked) on `machine`. The architecture: the checkpoint's
/// config.json when model.init_checkpoint is set, else model.shape's (policy::checkpoint_shape), else
/// the random-init model.* over the tokenizer's vocabulary. The memory budget: a CUDA run (train.device
/// cuda*, or auto with a visible GPU) uses the visible GPU's total, else train.gpu_memory_gb GiB; a CPU
/// run the host's MemTotal (0, no verdict, when unreadable). Throws spade::Error when a named
/// tokenizer or checkpoint cannot be read.
RunPlan plan_run(const Config& config, const PlanMachine& machine = {});

/// The plan as lines "key: value", for the terminal.
std::string describe(const RunPlan& plan, const Config& config);

}  // namespace spade::trainer
