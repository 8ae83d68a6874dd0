// The GRPO / PPO-clip update of one rollout batch (docs/design.md step 4): one optimizer step, or M PPO
// mini-batch steps (UpdateOptions::mini_batches); micro-batches packed by a token budget, gradients
// accumulated with the global normaliser, global-norm clipping, AdamW. Not thread-safe.
#pragma once
#include <torch/torch.h>

#include <vector>

#include "policy/transformer.h"
#include "rollout/sample.h"
#include "trainer/config.h"
#include "trainer/distributed.h"
#include "trainer/policy_loss.h"
#include "trainer/update_stats.h"

namespace spade::trainer {

// Defaults: the run config's optim.* (trainer/config.h OptimConfig); update_options(config)
// (config_bridge.h) builds one from a config.
struct UpdateOptions {
  PolicyLossConfig loss;
  int micro_batch_tokens = OptimConfig{}.micro_batch_tokens;  // padded tokens per micro-batch
  double grad_clip = OptimConfig{}.grad_clip;                 // max global grad norm; <= 0 disables
  // PPO mini-batches per rollout batch (config optim.mini_batches; verl ppo_mini_batch_size expressed
  // as a count, slime num_steps_per_rollout): M >= 1 optimizer steps per grpo_update call. M = 1 is
  // the single on-policy step (old_logp = logp.detach(), ratio exactly 1). M > 1: see grpo_update.
  int mini_batches = OptimConfig{}.mini_batches;
  int logprob_chunk_rows = OptimConfig{}.logprob_chunk_rows;  // token rows per lm_head chunk (sequence_logprobs, chunked_logprobs.h); <= 0: whole
  // Frozen reference policy for the KL penalty (loss.kl_coef != 0; required then): its logprobs are
  // computed per micro-batch under no_grad, at each sample's temperature like the policy's. Under
  // ZeRO-3 it may itself be sharded (shard_frozen_model, trainer/parameter_shards.h): its root is then
  // gathered for the update and its layers one at a time, every rank running the same forwards.
  policy::Transformer reference{nullptr};
  // Mixed precision of the forward passes (config train.autocast, trainer/autocast.h): "none" (the
  // model's own dtype) or "bf16" (matmuls in bfloat16 under autocast on the model's device; master
  // weights, gradients and optimizer state stay in the parameters' dtype, fp32).
  std::string autocast = TrainYaml{}.autocast;
};

// UpdateStats (what one update measured): trainer/update_stats.h.

/// Trains `model` on `samples` (designer samples first, docs/design.md step 4): one optimizer step
/// (options.mini_batches = 1) or M PPO mini-batch steps.
/// With loss.kl_coef != 0 the loss adds kl_coef * kl_penalty(logp, ref_logp) (policy_loss.h) with the
/// logprobs of options.reference; throws spade::Error when options.reference is missing then.
/// Each sample's per-sequence advantage is broadcast over its tokens. The loss of each step is
/// normalised over that step's WHOLE (mini-)batch (global_normaliser), never padded with inert
/// samples, so it does not depend on the micro-batch split. Samples without trainable tokens are
/// skipped. Returns zeros when nothing is trainable.
/// Why not the reference's padding (reference §1: a short batch is padded to 192 with zero-mask copies
/// and the real rewards are scaled by 192/n_real): under the seq-mean modes that is the same PG
/// gradient as the exact normaliser n_real (the clipped, TIS-weighted PG term is linear in a positive
/// scaling of A), but it spends forward and backward passes on the copies, scales the KL and entropy
/// terms by n_real/192 instead, and ties the batch to a fixed size; the exact normaliser has none of these.
///
/// M = 1 (default): the old policy logprobs are the current parameters' own (old_logp =
/// logp.detach(): ratio 1, so clip and dual clip never fire), so TIS weights compare the current
/// policy with the sampler's rollout logprobs: exactly the delayed-designer correction (reference §5)
/// and ~1 for fresh agent samples.
///
/// M > 1 (PPO mini-batches, verl ppo_mini_batch_size / slime num_steps_per_rollout): first the old
/// logprobs of every sample are computed under no_grad with the weights before the update (same
/// micro-batch packing, chunked lm_head and autocast as the training forwards: one extra forward pass
/// over the batch). Then the trainable samples are split IN ORDER, without shuffling (verl's split
/// with shuffle off), into M contiguous mini-batches whose sample counts differ by at most one (the
/// first n mod M get one more); designer samples come first, so the first mini-batch carries them.
/// Each mini-batch is one optimizer step with its own global normaliser: the PPO ratio
/// exp(logp - old_logp) moves away from 1 after the first step, so clip and dual clip act, and TIS
/// weights are exp(old_logp - rollout_logp) with the precomputed old_logp (trainer-anchors §1). The
/// learning rate is the one the caller set for this rollout, for all M steps (the schedule advances
/// once per rollout, as in slime). Dr.GRPO without loss.max_len takes L = the longest row of the
/// whole rollout batch (all mini-batches and ranks) for every step. A mini-batch that is empty on
/// every rank (fewer samples than M) is skipped by all ranks.
///
/// Data parallel (`dist` active): `samples` is this rank's share of the optimizer batch. Every rank
/// must call this with the same model, options and optimizer state. Mini-batch j of the global batch
/// is the union of every rank's j-th contiguous slice of its own share (so with M > 1 the global
/// mini-batches are not the slices a single process would cut from the whole batch, and a 1-rank run
/// matches a W-rank run only at M = 1). Each rank takes part in all M steps even when its slice is
/// empty, so the collectives match. Each normaliser is all-reduced (SUM) before any backward pass
/// (DrGrpo without loss.max_len first agrees on L with MAX), so each rank's loss is its share of the
/// whole-mini-batch loss; gradients are then summed over ranks (bucketed,
/// DistributedContext::all_reduce_gradients) before clipping, so the clip norm is the global one and
/// every rank applies the same step a single process on the whole mini-batch would (up to float
/// summation order). A rank without trainable samples still takes part. Stats are whole-batch values
/// on every rank (see UpdateStats), seconds the local time.
///
/// Sharded data parallel: when `optimizer` is a ShardedAdamW (trainer/sharded_optimizer.h, ZeRO-1 /
/// ZeRO-2) the reduction and the clip are its reduce_and_clip_gradients (over its own
/// DistributedContext, which must be `dist`'s job) and the full .grad tensors are released after it;
/// the step, the clip norm and the reported grad_norm are those of the unsharded update up to float
/// summation order.
///
/// Device: the micro-batches are packed on the model's device (model_device); options.reference must
/// live on the same device. Activation checkpointing is the model's own switch
/// (TransformerImpl::set_activation_checkpointing). Throws spade::Error for an unknown options.autocast
/// or options.mini_batches < 1.
UpdateStats grpo_update(policy::Transformer& model, torch::optim::Optimizer& optimizer,
                        const std::vector<rollout::Sample>& samples, const UpdateOptions& options,
                        const DistributedContext* dist = nullptr);

/// A right-padded micro-batch built from samples: inputs [B,T-1]... in model-ready form.
struct PackedBatch {
  torch::Tensor input_ids;     // [B, T] int64 (tokens[:-1], padded with 0)
  torch::Tensor targets;       // [B, T] int64 (tokens[1:])
  torch::Tensor loss_mask;     // [B, T] float32 (loss_mask[1:])
  torch::Tensor rollout_logp;  // [B, T] float32 (rollout_logprobs[1:])
  torch::Tensor advantages;    // [B, T] float32 (sample advantage broadcast)
  torch::Tensor temperature;   // [B] float32
  torch::Tensor positions;     // [B, T] int64 (0..T-1)
};

/// Sorts samples by length and splits them into micro-batches of at most `token_budget` padded
/// tokens (a single longer sample forms its own micro-batch), then packs each; every tensor of the
/// result lives on `device` (the model's: grpo_update passes its parameters' device).
std::vector<PackedBatch> pack_micro_batches(const std::vector<const rollout::Sample*>& samples,
                                            int token_budget, const torch::Device& device = torch::kCPU);

/// The device of `model`'s parameters (where its inputs must live).
torch::Device model_device(policy::Transformer& model);

/// Per-token logprobs and entropies of `batch.targets` under `model` ([B,T] float32 each),
/// with logits divided by each row's temperature (policy::token_logprobs definition). The entropy
/// (undefined unless with_entropy) carries gradients only when entropy_grad is set. chunk_rows > 0:
/// the output projection runs chunk_rows token rows at a time (trainer/chunked_logprobs.h), so the
/// [B*T, V] logits never exist at once, with or without a differentiable entropy (the entropy's
/// gradient is part of the chunked backward); chunk_rows <= 0: whole [B*T, V] float32 logits
/// (lm_head + policy::token_logprobs / token_entropy, differentiated by autograd).
std::pair<torch::Tensor, torch::Tensor> sequence_logprobs(policy::Transformer& model,
                                                          const PackedBatch& batch, bool with_entropy,
                                                          bool entropy_grad = false, int64_t chunk_rows = 0);

}  // namespace spade::trainer
