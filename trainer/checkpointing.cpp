#include "trainer/checkpointing.h"

#include "policy/checkpoint.h"

namespace spade::trainer {

std::string save_training_checkpoint(const RunDir& run, int64_t step, const rollout::PolicyRef& policy,
                                     const std::string& dtype) {
  policy::CheckpointSaveOptions options;
  options.dtype = dtype == "bf16" ? "bfloat16" : "float32";
  options.tokenizer_model = policy.tokenizer.model_path();
  const std::string dir = run.checkpoint_dir(step);
  policy::save_checkpoint(dir, policy.model, options);
  return dir;
}

}  // namespace spade::trainer
