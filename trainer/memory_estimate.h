// Per-GPU (per-rank) memory of a run, estimated from the model's shape and the run config before
// anything is loaded (`spade train --dry-run`, `spade config check`; trainer/run_plan.h). Torch-free;
// thread-safe (pure functions).
//
// What spade holds, read from its code (bytes; P parameters, L layers, h hidden, q = heads x head_dim,
// k = kv_heads x head_dim, I the MLP width, V the vocabulary, N tokens of a micro-batch):
//   weights      4 P   fp32 parameters: random init and policy::load_checkpoint are fp32, and
//                      train.autocast bf16 keeps fp32 master weights (trainer/autocast.h);
//                4 ceil(P / N) with distributed.sharding full (ZeRO-3, trainer/parameter_shards.h): this
//                      rank's master-weight shard (per-unit padding, < N elements a unit, not counted)
//   gathered     (full only, update phase) 4 R + 2 x 4 Lmax: the root unit (R: embeddings, final norm,
//                      lm_head) whole for the optimizer step, one layer (Lmax: the largest) whole at a
//                      time, and the next layer's all-gathered chunks (the prefetch) or, when they are
//                      joined, the joined layer in their place
//   inference    (full only, rollout phase) 4 P, or 2 P with distributed.inference_dtype bf16: the
//                      sampler's whole copy of the weights, all-gathered after each update
//   gradients    4 P   in the parameters' dtype (none, optimizer): backward accumulates the full .grad
//                      over the micro-batches and the reduction runs once after the last one;
//                4 ceil(P / N) + 2 B with distributed.sharding gradients (ZeRO-2 reduces bucket by bucket
//                      during backward, trainer/sharded_optimizer.h): this rank's summed shard plus one
//                      bucket's full .grad tensors and its flat copy, B = max(distributed.bucket_mb, the
//                      largest parameter tensor: a larger one is a bucket of its own); gradients that
//                      arrive out of order wait for the buckets before them (not counted)
//                4 ceil(P / N) + 4 R + 2 x 4 Lmax with distributed.sharding full: the summed shard, the
//                      root's .grad (accumulated over the micro-batches) and one layer's gradients with
//                      their padded flat copy for the reduce-scatter
//   optimizer    8 P   torch::optim::AdamW's exp_avg and exp_avg_sq, fp32 (trainer/config_bridge.cpp);
//                8 ceil(P / N) with distributed.sharding optimizer, gradients or full over N ranks (ZeRO-1 / 2 / 3,
//                Rajbhandari et al. 2020 §5.1; trainer/sharded_optimizer.h)
//   KL reference 4 P   a second fp32 copy of the policy when loss.kl_coef != 0 (trainer/train.cpp);
//                4 ceil(P / N) with distributed.sharding full (sharded as the policy; its root R whole
//                during the update, counted with the gathered parameters: + 4 R)
//   autocast     2 M   under bf16 autocast the bf16 copy of every matmul weight (M of the P: attention
//                      and MLP projections, router and experts, lm_head) is cached for the forward and
//                      saved for backward; with full sharding the cache is dropped as each layer is
//                      released: 2 (the largest layer's M + V h)
//   activations  what autograd saves for backward, counted tensor by tensor in policy/transformer.cpp
//                decoder_layer, the method of Korthikanti et al. 2022 ("Reducing Activation
//                Recomputation in Large Transformer Models", §4: 34 s b h + 5 a s^2 b bytes per layer
//                for GPT in fp16 with dropout), adapted to spade's layer (RMSNorm, q/k RMSNorm, RoPE,
//                GQA, SwiGLU, no dropout, an fp32 residual stream) and to autograd saving an input
//                only when the other input needs a gradient (so RoPE's x * cos saves only the table).
//                Bytes per token per layer, a = 4 (fp32) or 2 (bf16 autocast: matmul outputs and the
//                casts autocast saves; RMSNorm and RoPE compute in fp32):
//                  RMSNorms       fp32: 12 h each (input, normalised, output); autocast: 8 h + 2 h per
//                                 projection reading the output (its own bf16 cast): 14 h, 12 h
//                  q/k RMSNorm    fp32: 8 q + 8 k; autocast: 6 q + 6 k (fp32 input and bf16 normalised)
//                  attention      fused (sdpa): its q, K and V (expanded to q when kv_heads < heads,
//                                 else k), its output and the o_proj input: a (3 q + 2 q or 2 k);
//                                 matmul path: a (2 q + 2 k) + softmax heads x T (4 B, + 2 B bf16 copy
//                                 under autocast) with T the row length, plus a T x T bool mask per row
//                  SwiGLU MLP     4 a I (gate, silu, up, product)
//                  MoE layer      instead of the MLP: router softmax 4 x experts (fp32), and per chosen
//                                 expert (top-k): 4 a moe_I + a h (its output) + the routed input
//                                 (fp32: 4 h; autocast: two bf16 casts, 4 h); the router's input 2 h
//                                 under autocast replaces the MLP norm's two casts
//                e.g. Qwen3-4B shape, fused, autocast: 26 h + 16 q + 6 k + 8 I = 216,064 B.
//                Without train.activation_checkpointing: L layers' worth at N tokens. With it: each
//                layer's fp32 input (4 h per token per layer) plus one layer recomputed in backward
//                (Korthikanti §5, full recomputation). Plus the final norm, 12 h per token.
//                N = max(optim.micro_batch_tokens, the longest row): a row longer than the budget is
//                a micro-batch of its own (trainer/grpo_update.cpp pack_micro_batches); rows are
//                bounded by selfplay.context_tokens (agent episodes) and designer.max_new_tokens plus
//                its prompt (the prompt is not bounded by the config and not counted).
//   logits       chunked (optim.logprob_chunk_rows = c > 0, trainer/chunked_logprobs.cpp): two fp32
//                [c, V] buffers (+ a bf16 [c, V] copy under autocast) and the lm_head gradient buffer
//                V h x 4 B (+ its bf16 weight copy under autocast); unchunked: [N, V] logits and
//                log-softmax in fp32 (+ the bf16 matmul output under autocast).
//   KV cache     rollouts run in the sampler's weights' dtype (fp32, no autocast; bf16 with a bf16
//                inference copy): 2 L k x 4 B (or 2 B) per token.
//                Each play keeps its cache between turns until it ends (rollout/sampler.h
//                GenerationSession; max_tokens_in_flight bounds only the running batch), so the worst
//                case is every play of a rank at selfplay.context_tokens at once: ceil(environments /
//                world size) environments (plays are dealt by whole environments, selfplay_dp.h) x
//                max(plays_per_env, hint_plays). Designer rounds (one-shot batches of up to max_batch
//                rows of designer.max_new_tokens + prompt) are counted when larger.
// Not counted: the CUDA context and allocator fragmentation (measure with `spade bench step`), sampler
// transients (a prefill's attention scores, the running batch's logits), RoPE tables, host memory.
// Phases: the update (weights, gradients, optimizer, KL reference, autocast copies, activations,
// logits) and the rollouts (weights, inference copy, optimizer, KL reference, KV cache; LibTorch 2.x frees gradients
// after the step, zero_grad(set_to_none); a sharded optimizer releases them at the reduction) do not
// overlap; the peak is the larger. Data parallel replicates weights and gradients on every rank unless
// distributed.sharding says otherwise (the world size divides the optimizer state, then the gradients,
// then the weights), and divides the plays a rank caches.
// Cross-check: bench/RESULTS.md measured the Qwen3-4B shape's GRPO step on an H200 (bf16, sdpa, no
// checkpointing, 4096-token micro-batches): 100.8 GiB allocated at peak; this estimate gives 102.3 GiB
// for that step (tests/trainer/test_memory_estimate.cpp).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "policy/model_config.h"
#include "trainer/config.h"

namespace spade::trainer {

struct MemoryEstimate {
  int world_size = 1;
  bool autocast = false;             // train.autocast bf16
  bool checkpointing = false;        // train.activation_checkpointing
  bool fused_attention = false;      // sdpa (no score matrix) vs the matmul path
  int64_t parameters = 0;
  int64_t matmul_parameters = 0;     // M above
  int64_t micro_batch_tokens = 0;    // N above
  int64_t row_tokens = 0;            // the longest row bound T
  int64_t layer_bytes_per_token = 0; // one layer's saved activations per token (the formula above)
  // Bytes on each rank:
  int64_t weights = 0, gradients = 0, optimizer = 0, kl_reference = 0, autocast_weights = 0;
  int64_t gradient_bucket = 0;  // distributed.sharding gradients: B above (0 otherwise)
  // distributed.sharding full: parameters gathered during the update (root + one layer, above), the
  // rollouts' whole inference copy, the largest layer's and the root's parameter counts (0 otherwise).
  int64_t gathered = 0, inference_copy = 0, largest_layer = 0, root_parameters = 0;
  /// What stays resident across the phases plus the update's parameters and gradients: weights,
  /// gathered, gradients, optimizer, KL reference (the "training state" compared per sharding mode).
  int64_t training_state() const { return weights + gathered + gradients + optimizer + kl_reference; }
  int64_t activations = 0, logits = 0;
  int64_t kv_bytes_per_token = 0;
  int64_t inference_bytes = 4;       // bytes per element the sampler holds: 2 with distributed.inference_dtype bf16
  int64_t plays_per_rank = 0;        // plays a rank caches at once (worst case)
  int64_t kv_cache = 0;              // worst case over plays and designer rounds
  int64_t update_phase = 0, rollout_phase = 0, peak = 0;
  std::string sharding = "none";     // distributed.sharding of this estimate
  // Each sharding mode at this world size, in the order none, optimizer, gradients, full (the
  // same run otherwise): its training state (MemoryEstimate::training_state()) and its
  // peak per GPU, what describe_memory compares with the budget.
  struct ShardingFit {
    std::string mode;
    int64_t state = 0, peak = 0;
  };
  std::vector<ShardingFit> by_sharding;
};

/// The estimate for `model` trained under `config` on `world_size` ranks (>= 1). `cuda`: the training
/// device is a GPU (decides train.attention auto). Throws spade::Error for world_size < 1.
MemoryEstimate estimate_memory(const policy::ModelConfig& model, const Config& config, int world_size, bool cuda);

/// What the estimate is checked against: a device's memory in bytes (0: unknown, no verdict) and where
/// the number came from ("train.gpu_memory_gb (no GPU visible)", "cuda:0: 139.8 GiB total", ...).
struct MemoryBudget {
  int64_t bytes = 0;
  std::string source;
};

/// The first sharding mode of estimate.by_sharding (none, optimizer, gradients, full) whose peak fits
/// `budget` (state_only: whose training state fits, leaving activations and the KV cache aside); ""
/// when none does or when the budget is unknown (bytes <= 0).
std::string sharding_needed(const MemoryEstimate& estimate, const MemoryBudget& budget, bool state_only = false);

/// The estimate as indented lines "  NAME: X GiB (how)", the phases, the peak and whether it fits
/// `budget` (and, when it does not, what would have to change).
std::string describe_memory(const MemoryEstimate& estimate, const MemoryBudget& budget);

}  // namespace spade::trainer
