// What a run config will do, resolved without doing any of it (`spade train --dry-run`, `spade config
// check`): the self-play schedule, the plays and tokens per step and the policy's size. Reads the
// tokenizer or the initial checkpoint's config.json when the config names one; writes nothing.
// Torch-free; thread-safe.
#pragma once
#include <cstdint>
#include <string>

#include "trainer/config.h"

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
  std::string model_source;          // "model.* (random init)" or model.init_checkpoint
};

/// Resolves `config` (already loaded and checked). Throws spade::Error when a named tokenizer or
/// checkpoint cannot be read.
RunPlan plan_run(const Config& config);

/// The plan as lines "key: value", for the terminal.
std::string describe(const RunPlan& plan, const Config& config);

}  // namespace spade::trainer
