// Checkpoints of a run (docs/design.md, Contracts; issue 5 "Checkpoints and resume"):
//
//   checkpoints/step_NNNNNN/            the policy in HF layout (config.json, generation_config.json,
//                                       model.safetensors, tokenizer.model): loadable by transformers
//   checkpoints/step_NNNNNN/trainer_state/
//       state.json       SelfPlayState: next step, loop RNG, corpus position, live environments with
//                        their window rewards, the delayed designer buffer, skill EMAs, summary
//       optimizer.pt     torch::save of the AdamW state (step counts, exp_avg, exp_avg_sq, options), or
//       optimizer_shard_RRRRR_of_WWWWW.pt  one per rank under distributed.sharding optimizer / gradients
//                        (trainer/optimizer_shards.h; a resume re-shards them for any world size)
//       torch_rng.pt     the default torch CPU generator state
//       memory.json      environment memory (reference §6)
//       model_fp32.safetensors  full-precision weights (module parameter names), only when the HF
//                        weights are bf16 (exact resume); checkpoints of earlier versions: model_fp32.pt
//
// The weights are written one tensor at a time (policy/checkpoint_writer.h): from the model, or under
// ZeRO-3 from the parameter shards gathered unit by unit, so no rank holds a whole copy to save it.
//
// Atomicity: the whole directory is assembled under checkpoints/.stage_step_NNNNNN and published with
// one rename, so a process killed at any point leaves either the previous checkpoint set or the new
// complete one; state.json is written last inside the stage. Not thread-safe; one writer per run.
#pragma once
#include <torch/torch.h>

#include <functional>
#include <string>

#include "policy/checkpoint_writer.h"
#include "policy/transformer.h"
#include "rollout/policy_ref.h"
#include "trainer/env_memory.h"
#include "trainer/run_dir.h"
#include "trainer/selfplay_state.h"
#include "trainer/sharded_optimizer.h"

namespace spade::trainer {

/// What a resumable checkpoint carries beside the policy. All references must outlive the call.
struct TrainerStateRefs {
  const SelfPlayState& state;
  torch::optim::Optimizer& optimizer;
  const EnvMemory& memory;
};

/// The weights a checkpoint is written from, one parameter at a time: every parameter's name
/// (Transformer::named_parameters) and shape, and for_each(visit), which calls visit(name, values) once
/// per parameter (values: any dtype and device, valid during the call).
struct CheckpointWeights {
  using Visit = std::function<void(const std::string& name, const torch::Tensor& values)>;
  policy::CheckpointWriter::ParameterShapes shapes;
  std::function<void(const Visit&)> for_each;
};
/// The model's own parameters (`model` must outlive the result).
CheckpointWeights model_weights(policy::Transformer model);
/// ZeRO-3's master weights (mode Full; `optimizer` must outlive the result), gathered unit by unit:
/// for_each is collective, so every rank calls it at the same point, and only rank 0's visit writes
/// (the other ranks run ParameterShards::gather_each with a visit that does nothing).
CheckpointWeights sharded_weights(const ShardedAdamW& optimizer);

/// Writes the policy to run.checkpoint_dir(step) atomically (`dtype`: "fp32" or "bf16" tensors in
/// model.safetensors) and, when `trainer_state` is given, the trainer state beside it in the same
/// atomic publish. The weights come from `weights` (default: model_weights(policy.model)); the config
/// and tokenizer from `policy`. Returns the directory. Throws spade::Error on I/O failure.
std::string save_training_checkpoint(const RunDir& run, int64_t step, const rollout::PolicyRef& policy,
                                     const std::string& dtype,
                                     const TrainerStateRefs* trainer_state = nullptr,
                                     const CheckpointWeights* weights = nullptr);

/// Sharded optimizer (ZeRO-1 / ZeRO-2): every rank calls this for `step` before rank 0's
/// save_training_checkpoint of that step, and the caller then waits on a barrier; it writes this rank's
/// shard (atomically) to checkpoints/.shards_step_NNNNNN/, whose complete set save_training_checkpoint
/// moves into trainer_state/ (so the one-rename publish stays atomic). Every rank must see the run
/// directory (one node, or a shared file system). Throws spade::Error on I/O failure.
void write_optimizer_shard(const RunDir& run, int64_t step, const ShardedAdamW& optimizer);

/// The newest checkpoints/step_NNNNNN directory of `run` that holds trainer_state/state.json;
/// "" when there is none. Also removes leftovers of interrupted saves (.stage_*, *.tmp, *.old).
std::string latest_resumable_checkpoint(const RunDir& run);

/// Loads the policy of a training checkpoint for resuming: the HF weights, then model_fp32.safetensors
/// (or an earlier version's model_fp32.pt) over them when present. Float32 CPU parameters (also when a
/// GPU run wrote them; the caller moves the model to train.device). Throws spade::Error naming the file
/// on bad input.
policy::Transformer load_training_policy(const std::string& checkpoint_dir);

/// Restores the trainer state of `checkpoint_dir`: fills `optimizer` (which must have been built over
/// the same parameters in the same order; its moments are loaded onto the device of those parameters,
/// whichever device wrote them), `memory`, and the default torch CPU generator, and returns
/// the loop state. A ShardedAdamW reads the overlapping slices of the saved shard files whatever
/// world size wrote them (every rank calls this). Throws spade::Error naming the file when something
/// is missing or malformed, or when the checkpoint's optimizer is sharded and `optimizer` is not (or
/// the reverse).
SelfPlayState load_trainer_state(const std::string& checkpoint_dir, torch::optim::Optimizer& optimizer,
                                 EnvMemory& memory);

/// `spade export`: writes a clean HF checkpoint of `checkpoint_dir` (a training checkpoint or any HF
/// directory this project can load) to `out_dir`: config.json, generation_config.json,
/// model.safetensors in `dtype` ("fp32" or "bf16"; bf16 is rounded once from the fp32 weights when the
/// checkpoint keeps them), or shards + model.safetensors.index.json when the weights exceed
/// `max_shard_size` bytes (policy::CheckpointSaveOptions::max_shard_size; default 0 = its default,
/// transformers' "5GB"), and the tokenizer files; no trainer state. Written in a temporary sibling
/// of `out_dir` and renamed over it (common/output_path.h): a failure leaves an old `out_dir` whole.
/// An existing non-empty `out_dir` is replaced only with `overwrite`, and never when it is or holds
/// the checkpoint, a run directory or the working directory; its parent must exist.
/// Throws spade::Error for a bad dtype, an unreadable source, `out_dir` equal to or inside
/// `checkpoint_dir`, or an `out_dir` the rule refuses (before anything is read or written).
void export_checkpoint(const std::string& checkpoint_dir, const std::string& out_dir, const std::string& dtype,
                       uint64_t max_shard_size = 0, bool overwrite = false);

}  // namespace spade::trainer
