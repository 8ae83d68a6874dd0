// Per-token logprobs (and entropies) through the output projection, a chunk of token rows at a time,
// so that the full-vocabulary logits of a micro-batch ([N, V] float32: 4096 tokens x 152k vocabulary =
// 2.5 GB) never exist at once, in the forward pass or in the backward pass (issue 5, "chunked logprob
// computation"). A custom autograd function saves only hidden, the weight, the targets and two numbers
// per row (log-sum-exp and E_p[z]); backward recomputes each chunk's logits (one extra lm_head matmul
// per chunk, the usual price, as in fused/chunked cross-entropy kernels).
//
// Math (identical to policy::token_logprobs / policy::token_entropy on lm_head's logits, up to
// summation order). Per row, h [H], W [V, H], tau > 0, target y, g = dL/dlogp, gH = dL/dH:
//   z     = (h W^T).float() / tau                      (float64 instead when h is float64)
//   lse   = logsumexp(z),  p = softmax(z) = exp(z - lse)
//   logp  = z_y - lse
//   H     = -sum_k p_k log p_k = lse - sum_k p_k z_k = lse - E_p[z]        (entropy, nats)
// Derivatives (d lse / dz_k = p_k, d p_j / dz_k = p_j (delta_jk - p_k)):
//   d logp / dz_k = delta_ky - p_k
//   d/dz_k sum_j p_j z_j = sum_j p_j (delta_jk - p_k) z_j + p_k = p_k z_k - p_k E_p[z] + p_k
//   d H / dz_k    = p_k - (p_k z_k - p_k E_p[z] + p_k) = -p_k (z_k - E_p[z])
//   dL/dz_k = g (delta_ky - p_k) - gH p_k (z_k - E_p[z]) = g delta_ky - p_k (g + gH (z_k - E_p[z]))
//   dL/dh = (dL/dz / tau) W,   dL/dW = (dL/dz / tau)^T h      (summed over rows)
// Working memory per chunk of m rows ([m, V] buffers in the compute dtype):
//   forward: two (the logits z, and e = exp(z - max z) updated in place); one exp pass serves lse,
//            logp and the entropy (lse = max + log sum e, E_p[z] = sum(e z) / sum e).
//   backward: one (the recomputed logits, turned into dL/dz in place) when the entropy receives no
//            gradient; two (z and p, one exp pass) when it does. Under autocast add the [m, V]
//            low-precision matmul output and one low-precision copy of dL/dz.
// Under bf16 autocast (trainer/autocast.h) the h W^T matmuls run in bf16 in forward, and backward runs
// its recomputation and both gradient matmuls in bf16 too (softmax and accumulation in float32).
#pragma once
#include <torch/torch.h>

#include "policy/transformer.h"

namespace spade::trainer {

/// The output projection [V, H] of `model`: parameter "lm_head.weight", or "model.embed_tokens.weight"
/// when the embeddings are tied. Throws spade::Error when neither exists.
torch::Tensor lm_head_weight(policy::Transformer& model);

/// logp [N] of `targets` [N] int64 under softmax((hidden [N,H] @ weight[V,H]^T).float() /
/// temperature [N]), differentiable in hidden and weight, computed `chunk_rows` rows at a time
/// (chunk_rows >= 1; > N is one chunk). Results are float32, or float64 when hidden is float64 (then
/// weight must be float64 too; the logits are not rounded to float32). If `entropy` is non-null it
/// receives the per-row entropy [N] (nats, same dtype as logp); with entropy_grad it is differentiable
/// in hidden and weight like logp (the header's formula for dH/dz), otherwise it is returned detached
/// (a metric: backward then skips the entropy's term). Throws c10::Error on shape mismatch,
/// chunk_rows < 1, or a float64 hidden with a weight of another dtype.
torch::Tensor chunked_token_logprobs(const torch::Tensor& hidden, const torch::Tensor& weight,
                                     const torch::Tensor& targets, const torch::Tensor& temperature,
                                     int64_t chunk_rows, torch::Tensor* entropy = nullptr,
                                     bool entropy_grad = false);

}  // namespace spade::trainer
