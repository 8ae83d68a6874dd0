// Batched autoregressive sampling from a policy Transformer with a KV cache, returning the sampled
// token ids and their per-token rollout logprobs (token-in/token-out, DESIGN.md "Contracts").
//
// Batching: up to max_batch sequences decode together; prompts of different lengths are left-padded
// (key mask false on padding, RoPE positions counting real tokens only). When a sequence finishes its
// row is dropped and the next queued prompt is prefilled and joins the running batch (continuous
// batching); padding that every row has in front is trimmed.
// Thread safety: generate() reads the model's parameters only; do not train the model concurrently.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "policy/transformer.h"

namespace spade::rollout {

/// Defaults: SPADE reference §5 (temperature 0.6, top-p 0.95, top-k 20).
struct SamplingParams {
  double temperature = 0.6;   // 0 = greedy (argmax); logprobs then use temperature 1
  double top_p = 0.95;        // nucleus: keep the smallest prefix (by prob, descending) whose mass >= top_p
  int top_k = 20;             // keep the k most likely tokens; <= 0 disables
  double min_p = 0.0;         // keep tokens with p >= min_p * p_max; 0 disables
  int max_new_tokens = 256;   // per sequence
  /// Finishing tokens (e.g. ChatTemplate::eos_id()). Empty = stop only at max_new_tokens.
  std::vector<int64_t> stop_token_ids;
};

struct GenerationResult {
  std::vector<int64_t> tokens;   // sampled ids (prompt excluded); a stop token, if any, is the last one
  /// logprobs[i] = policy::token_logprobs(logits_i, tokens[i], temperature): the log-probability under
  /// the UNFILTERED temperature-scaled distribution (what the trainer recomputes), even though the
  /// token was drawn after top-k/top-p/min-p filtering. Greedy: temperature 1.
  std::vector<float> logprobs;
  std::string finish_reason;     // "stop" (stop token included as last token) | "length"
};

/// Samples one continuation per prompt; results are in prompt order.
/// Filtering order as in HF generate: temperature, top-k, top-p, min-p, then a draw from the
/// renormalised survivors. Randomness: each prompt i has its own stream seeded by (seed, i), so its
/// draws do not depend on which other prompts share the batch; the same inputs, seed and max_batch
/// give identical results. Runs under torch::NoGradGuard on the model's device.
/// Throws spade::Error for an empty prompt, max_batch < 1 or invalid parameters (temperature < 0,
/// top_p outside (0, 1], min_p outside [0, 1]).
std::vector<GenerationResult> generate(policy::Transformer& model, const std::vector<std::vector<int64_t>>& prompts,
                                       const SamplingParams& params, uint64_t seed, int max_batch = 32);

}  // namespace spade::rollout
