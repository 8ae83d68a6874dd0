// Per-token logprobs through the output projection, a chunk of token rows at a time, so that the
// full-vocabulary logits of a micro-batch ([N, V] float32: 4096 tokens x 152k vocabulary = 2.5 GB) never
// exist at once, in the forward pass or in the backward pass (issue 5, "chunked logprob computation").
// A custom autograd function saves only hidden, the weight, the targets and one log-sum-exp per row;
// backward recomputes each chunk's logits (one extra lm_head matmul per chunk, the usual price, as in
// fused/chunked cross-entropy kernels). Working memory per chunk: two [chunk_rows, V] float32 buffers
// (the logits and their exponentials, updated in place; one exp pass serves logsumexp and entropy).
//
// Math (identical to policy::token_logprobs on lm_head's logits, up to float summation order):
//   z     = (h W^T).float() / tau_row                  h [n, H], W [V, H]
//   lse   = logsumexp(z)                               logp = z[target] - lse
//   dL/dz = g * (onehot(target) - softmax(z))          g = dL/dlogp  [n]
//   dL/dh = (dL/dz / tau) W,   dL/dW = (dL/dz / tau)^T h
//   entropy (no gradient) = lse - sum softmax(z) * z
// Under bf16 autocast (trainer/autocast.h) the h W^T matmuls run in bf16 in forward, and backward runs
// its recomputation and both gradient matmuls in bf16 too (softmax and accumulation in float32).
#pragma once
#include <torch/torch.h>

#include "policy/transformer.h"

namespace spade::trainer {

/// The output projection [V, H] of `model`: parameter "lm_head.weight", or "model.embed_tokens.weight"
/// when the embeddings are tied. Throws spade::Error when neither exists.
torch::Tensor lm_head_weight(policy::Transformer& model);

/// logp [N] float32 of `targets` [N] int64 under softmax((hidden [N,H] @ weight[V,H]^T).float() /
/// temperature [N] float32), differentiable in hidden and weight, computed `chunk_rows` rows at a time
/// (chunk_rows >= 1). If `entropy` is non-null it receives the per-row entropy [N] float32 (nats),
/// without gradient. Throws c10::Error on shape mismatch.
torch::Tensor chunked_token_logprobs(const torch::Tensor& hidden, const torch::Tensor& weight,
                                     const torch::Tensor& targets, const torch::Tensor& temperature,
                                     int64_t chunk_rows, torch::Tensor* entropy = nullptr);

}  // namespace spade::trainer
