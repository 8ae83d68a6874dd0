// What one GRPO update reports (grpo_update.h), as a plain torch-free struct so that the step record
// (step_record.h) and its tests need no LibTorch. Plain data: thread-compatible.
#pragma once
#include <cstdint>

namespace spade::trainer {

/// What one update measured (metric names of docs/design.md, verl/slime style). With M > 1 mini-batches
/// (UpdateOptions::mini_batches) the values combine the M optimizer steps: the additive terms
/// (pg_loss, entropy, kl) and grad_norm are MEANS over the steps taken (each step's value is that
/// mini-batch's whole loss under its own normaliser, so a mean keeps them on the M = 1 scale; a sum
/// would grow with M); the fractions and token means (pg_clipfrac, pg_clipfrac_lower, ppo_kl,
/// tis_mean, tis_clipfrac, rollout_logp_abs_diff) are weighted by tokens over all steps; counts
/// (num_samples, num_tokens: every sample is in exactly one mini-batch; num_micro_batches) are totals.
/// M = 1: exactly the single step's values.
struct UpdateStats {
  double pg_loss = 0, pg_clipfrac = 0, ppo_kl = 0, entropy = 0, grad_norm = 0;
  double pg_clipfrac_lower = 0;  // fraction of tokens where the dual clip is active (policy_loss.h)
  double tis_mean = 1, tis_clipfrac = 0, rollout_logp_abs_diff = 0;
  double kl = 0;  // aggregated KL penalty to the reference, before kl_coef (0 without a reference)
  int64_t num_samples = 0, num_tokens = 0, num_micro_batches = 0;
  int64_t num_optimizer_steps = 0;  // steps taken: M, less any mini-batch empty on every rank; 0 if nothing trained
  double seconds = 0;
};

}  // namespace spade::trainer
