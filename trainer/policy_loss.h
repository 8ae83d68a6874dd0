// GRPO / PPO-clip policy loss with clip-higher, dual clip, truncated importance sampling (TIS),
// KL to a reference policy, entropy bonus, and batch-size-invariant aggregation.
//
// Sources: trainer-anchors §1 and §4 (docs/sources.md) (slime, verl, TRL, OpenRLHF behaviour and
// cross-check numbers); reference §5 (docs/sources.md) (SPADE's settings: eps 0.2/0.28,
// TIS cap 2.0, entropy 0, low_var_kl coefficient 0 or 0.005).
//
// Per token (all [B,T]):
//   r      = exp(clamp(logp - old_logp, -log_ratio_clamp, +log_ratio_clamp))
//   pg     = max(-r A, -clip(r, 1 - eps_low, 1 + eps_high) A)                  (PPO clip, clip-higher)
//   pg     = min(pg, -c A) where A < 0, if dual_clip_c is set (c > 1)           (dual clip)
//   w      = clamp(exp(old_logp - rollout_logp), tis_low, tis_cap), detached   (TIS; 1 if tis = false;
//            per token, or one weight per sequence: see TisLevel)
//   token  = w * pg + kl_coef * kl_penalty(logp, ref_logp, kl_type) - entropy_coef * entropy
// then aggregated over loss_mask with the GLOBAL normaliser (see AggMode / global_normaliser).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "trainer/config.h"

namespace spade::trainer {

/// How per-token losses become one scalar. `normaliser` is always the global denominator over the
/// whole optimizer batch (all micro-batches and data-parallel ranks), so summing the losses of the
/// micro-batches (and all-reducing gradients with SUM) gives exactly the whole-batch loss:
///   TokenMean        : sum_{b,t} m*l / (global masked-token count)                 (verl default)
///   SeqMeanTokenMean : sum_b [sum_t m*l / max(1, sum_t m)] / (global sequence count) (slime "grpo")
///   SeqMeanTokenSum  : sum_b sum_t m*l / (global sequence count)
///   DrGrpo           : sum_{b,t} m*l / (global sequence count * max_len)             (Dr.GRPO)
/// The sequence count includes fully masked rows (SPADE pads the batch with zero-mask copies and
/// rescales real rewards by 192/n_real, which assumes they count).
enum class AggMode { TokenMean, SeqMeanTokenMean, SeqMeanTokenSum, DrGrpo };

/// KL estimators with x = logp - ref_logp: K1 = x; K2 = x^2 / 2; K3 = exp(-x) - 1 + x;
/// LowVarKl = K3 clamped to [-10, 10] (verl "low_var_kl").
enum class KlType { K1, K2, K3, LowVarKl };

/// The granularity of the truncated importance-sampling weight (verl's rollout-IS levels), with
/// d_t = old_logp_t - rollout_logp_t and m_t the loss mask of one sequence (all detached):
///   Token     : w_t = clamp(exp(d_t), tis_low, tis_cap)                     (slime/verl token TIS)
///   Sequence  : w   = clamp(exp(sum_t m_t d_t), tis_low, tis_cap)           (verl rollout-IS "sequence":
///               the importance ratio of the whole sequence, broadcast to its tokens)
///   Geometric : w   = clamp(exp(sum_t m_t d_t / max(1, sum_t m_t)), ...)   (verl "geometric": the
///               geometric mean of the token ratios, length-independent, broadcast to its tokens)
/// The weight multiplies the clipped PG loss only (trainer-anchors §1).
enum class TisLevel { Token, Sequence, Geometric };

/// Canonical names: "token_mean", "seq_mean_token_mean", "seq_mean_token_sum", "dr_grpo";
/// "k1", "k2", "k3", "low_var_kl"; "token", "sequence", "geometric". Parsers throw spade::Error
/// listing the valid names.
std::string to_string(AggMode mode);
AggMode parse_agg_mode(const std::string& name);
std::string to_string(KlType type);
KlType parse_kl_type(const std::string& name);
std::string to_string(TisLevel level);
TisLevel parse_tis_level(const std::string& name);

/// Defaults: the run config's loss.* (trainer/config.h LossYaml, which gives each one's source:
/// eps 0.2/0.28 clip-higher, TIS cap 2.0 (slime/verl C), token TIS, slime's seq_mean_token_mean,
/// verl's low_var_kl, entropy and KL coefficients 0); loss_config(config.loss) (config_bridge.h)
/// builds one from a config.
struct PolicyLossConfig {
  double eps_low = LossYaml{}.eps_low, eps_high = LossYaml{}.eps_high;  // clip-higher (paper Sec. 4.1)
  std::optional<double> dual_clip_c;      // e.g. 3.0; must be > 1 (config: loss.dual_clip_c, 0 = unset)
  double log_ratio_clamp = 20.0;          // clamp of logp - old_logp before exp
  AggMode agg_mode = parse_agg_mode(LossYaml{}.agg_mode);
  int64_t max_len = LossYaml{}.max_len;   // DrGrpo: L in B*L (0 = use the masks' T in global_normaliser)
  bool tis = LossYaml{}.tis;
  double tis_cap = LossYaml{}.tis_cap, tis_low = LossYaml{}.tis_low;  // truncated IS
  TisLevel tis_level = parse_tis_level(LossYaml{}.tis_level);  // see TisLevel
  double entropy_coef = LossYaml{}.entropy_coef, kl_coef = LossYaml{}.kl_coef;
  KlType kl_type = parse_kl_type(LossYaml{}.kl_type);
};

struct PolicyLossTerms {
  torch::Tensor loss;  ///< scalar, differentiable, already divided by the global normaliser
  // Additive terms (same aggregation and normaliser as `loss`; summing them over micro-batches and
  // ranks gives the whole-batch value): pg_loss is the TIS-weighted PG part, entropy the aggregated
  // entropy (0 if none given), kl the aggregated KL penalty before kl_coef (0 if no ref_logp).
  double pg_loss = 0.0, entropy = 0.0, kl = 0.0;
  // Token means over this call's masked tokens (combine across micro-batches weighted by num_tokens):
  double pg_clipfrac = 0.0;        ///< fraction where the clipped term is active (verl definition)
  double pg_clipfrac_lower = 0.0;  ///< fraction where the dual clip is active (A < 0)
  double ppo_kl = 0.0;             ///< mean(old_logp - logp)
  double tis_mean = 0.0;           ///< mean TIS weight after clamping (1 if tis off); per token, a
                                   ///< sequence-level weight counted once for each of its tokens
  double tis_clipfrac = 0.0;       ///< fraction of tokens whose raw TIS weight (the token's, or its
                                   ///< sequence's at Sequence/Geometric level) lies outside [tis_low, tis_cap]
  double rollout_logp_abs_diff = 0.0;  ///< mean |old_logp - rollout_logp| (train/rollout mismatch)
  int64_t num_tokens = 0;          ///< masked tokens in this call
};

/// The policy loss of one micro-batch. Shapes: all [B,T]. logp requires grad (current policy);
/// old_logp (trainer logprobs before the update) and rollout_logp (sampler) are treated as
/// constants; advantages float (per-token, a per-sequence advantage broadcast); loss_mask {0,1}.
/// entropy (needed iff entropy_coef != 0) and ref_logp (needed iff kl_coef != 0) may be undefined
/// tensors. Computation runs in float32 (float64 if logp is float64). normaliser: see AggMode and
/// global_normaliser; if normaliser <= 0 (a batch without tokens) the loss is a zero that is still
/// connected to logp (so every rank can run backward) and the metrics are 0.
/// Throws spade::Error on shape mismatch or a missing required tensor.
PolicyLossTerms compute_policy_loss(const torch::Tensor& logp, const torch::Tensor& old_logp,
                                    const torch::Tensor& rollout_logp, const torch::Tensor& advantages,
                                    const torch::Tensor& loss_mask, double normaliser,
                                    const PolicyLossConfig& config = {},
                                    const torch::Tensor& entropy = torch::Tensor(),
                                    const torch::Tensor& ref_logp = torch::Tensor());

/// Aggregates per-token values [B,T] under loss_mask [B,T] with the given mode and global
/// normaliser (see AggMode). Returns a scalar (differentiable in token_values).
torch::Tensor aggregate_loss(const torch::Tensor& token_values, const torch::Tensor& loss_mask, AggMode mode,
                             double normaliser);

/// The global normaliser of a batch split into micro-batches (the masks of ONE rank; all-reduce the
/// result with SUM across data-parallel ranks): masked-token count for TokenMean, row count for
/// SeqMean*, row count * L for DrGrpo with L = max_len, or the largest T among the masks if
/// max_len <= 0 (then all ranks must agree on L: pass max_len explicitly in distributed runs).
double global_normaliser(AggMode mode, const std::vector<torch::Tensor>& loss_masks, int64_t max_len = 0);

/// Per-token KL penalty estimator, x = logp - ref_logp (see KlType). Differentiable in logp.
torch::Tensor kl_penalty(const torch::Tensor& logp, const torch::Tensor& ref_logp, KlType type);

}  // namespace spade::trainer
