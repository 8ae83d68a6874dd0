// Checkpoints of a run: the policy in HF layout under checkpoints/step_NNNNNN/ (DESIGN.md).
#pragma once
#include <string>

#include "rollout/policy_ref.h"
#include "trainer/run_dir.h"

namespace spade::trainer {

/// Writes the policy (config.json, generation_config.json, model.safetensors, tokenizer.model) to
/// run.checkpoint_dir(step) atomically; `dtype` is "fp32" or "bf16". Returns the directory.
/// Throws spade::Error on I/O failure.
std::string save_training_checkpoint(const RunDir& run, int64_t step, const rollout::PolicyRef& policy,
                                     const std::string& dtype);

}  // namespace spade::trainer
