// One GRPO optimizer step of a random model of a given shape, timed on a given device: the GPU check of
// issue 5 ("one GRPO step of a Qwen3-4B-shaped random model in bf16 on one H200 at 8 x 4096 tokens:
// tokens/s, MFU, peak memory"; scripts/gpu/run_trainer_check.sh) and, at small shapes on the CPU, the
// activation-checkpointing memory figure of bench/RESULTS.md. The step is trainer::grpo_update itself
// (forward, PPO-clip loss with TIS, backward, global-norm clip, AdamW), on a synthetic batch.
// Not thread-safe.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "policy/model_config.h"
#include "policy/model_shapes.h"
#include "rollout/sample.h"
#include "trainer/config.h"
#include "trainer/distributed.h"

namespace spade::trainer {

/// The Qwen3-4B architecture, defined in policy/model_shapes.h (shared with `spade bench sampler`).
using policy::qwen3_4b_shape;

/// Model FLOPs of one training token (forward + backward) at sequence length `seq`, by the PaLM formula
/// (Chowdhery et al. 2022, appendix B): 6 * N + 12 * L * H * Q * T, where N counts the weights that
/// enter a matmul (every layer's projections, for MoE layers the router and the top-k experts only, plus
/// the vocab x hidden output projection; the embedding lookup is not a matmul), L layers, H query heads of size Q, T = seq (full, non-causal attention
/// scores: what policy/transformer.cpp computes). Recomputation (activation checkpointing, the chunked
/// logprob backward) is not counted: this is the MFU numerator, not hardware FLOPs.
double train_flops_per_token(const policy::ModelConfig& model, int64_t seq);

/// Model FLOPs utilisation of an update that trained `samples` in `seconds` on a device of
/// `peak_tflops` (10^12 FLOP/s): sum over samples of train_flops_per_token(model, T) * T (T = the
/// sample's token count: each sequence's attention term at its own length), / seconds / peak.
/// 0 when seconds or peak_tflops is not positive.
double update_mfu(const policy::ModelConfig& model, const std::vector<rollout::Sample>& samples, double seconds,
                  double peak_tflops);

/// A synthetic GRPO batch (the workload of `spade bench trainer` and `spade bench step`),
/// deterministic in `seed`: `batch` agent samples of seq+1 tokens (uniform random ids), each a prompt of seq/4..seq/2 context tokens followed by alternating policy turns
/// (16..63 sampled tokens, loss mask 1) and observations (8..31 context tokens, mask 0), as
/// multi-turn episodes look (docs/design.md Tokens). Rollout logprobs of sampled tokens are
/// -ln(V) + N(0, 0.3): near a random model's own logprob (~ -ln V), so the TIS weights
/// exp(old - rollout) spread around 1 and a few exceed the cap 2. Advantages: GRPO z-scores
/// (population std, epsilon 1e-8) of U(0,1) rewards within groups of 4 consecutive samples.
std::vector<rollout::Sample> synthetic_grpo_batch(int64_t vocab, int batch, int seq, double temperature, uint64_t seed);

struct StepBenchOptions {
  policy::ModelConfig model = qwen3_4b_shape();
  int batch = 8, seq = 4096;                 // sequences x tokens (issue 5: 8 x 4096)
  std::string device = TrainYaml{}.device;   // train.device syntax (trainer/device.h)
  std::string autocast = "bf16";             // train.autocast
  bool activation_checkpointing = true;      // train.activation_checkpointing
  std::string attention = TrainYaml{}.attention;  // train.attention (auto: scaled_dot_product_attention on CUDA)
  int micro_batch_tokens = OptimConfig{}.micro_batch_tokens;  // optim.micro_batch_tokens (gradient accumulation)
  int logprob_chunk_rows = OptimConfig{}.logprob_chunk_rows;  // optim.logprob_chunk_rows
  double entropy_coef = LossYaml{}.entropy_coef;              // loss.entropy_coef (> 0: the entropy bonus's gradient too)
  std::string sharding = DistributedYaml{}.sharding;          // distributed.sharding (trainer/sharding.h): the optimizer
                                                              // is then a ShardedAdamW over `dist` (required)
  bool prefetch = true;                      // sharding full: prefetch each next layer's all-gather
                                             // (trainer/parameter_shards.h); false measures without
  int warmup_steps = 1, steps = 1;           // untimed, then timed optimizer steps
  uint64_t seed = 1;
  double peak_tflops = 989.0;  // MFU denominator: H100/H200 SXM dense bf16 tensor-core peak, 989 TFLOPS
                               // (NVIDIA H200 datasheet: 1,979 TFLOPS "with sparsity" = 2x dense)
};

struct StepBenchResult {
  std::string device;               // resolved, e.g. "cuda:0"
  int64_t params = 0, tokens = 0;   // parameters; tokens per step (batch * seq)
  double flops_per_token = 0;       // train_flops_per_token
  std::vector<double> step_s;       // wall time of each timed step (device-synchronised), seconds
  double tokens_per_s = 0;          // tokens / median step time
  double mfu = 0;                   // tokens_per_s * flops_per_token / (peak_tflops * 1e12)
  double peak_rss_mb = 0;           // process VmHWM (host memory; on the CPU: the whole step's peak)
  double peak_gpu_allocated_mb = -1;  // CUDA: max allocated over the timed steps (device_memory.h); -1 elsewhere
  double peak_gpu_reserved_mb = -1;   // CUDA: max reserved (caching allocator) over the timed steps; -1 elsewhere
  double pg_loss = 0, grad_norm = 0;  // first timed step (finite: checked)
  int64_t micro_batches = 0;
  int64_t prefetched_gathers = 0;   // sharding full: layer gathers a prefetch served, over all steps
  int64_t optimizer_state_bytes = 0;  // this rank's AdamW moments after the steps (bytes; 1/N of P x 8 when sharded)
  int world_size = 1;                 // ranks in the step (dist's world size, 1 without)
};

/// The workload `spade bench step` runs when it is given no shape (--shape auto), batch or seq: one
/// that fits the machine it is on.
struct StepBenchFit {
  std::string shape;     // one of policy::model_shape_names()
  int batch = 0, seq = 0;
  std::string reason;    // why this shape, in one line for the user
};

/// `free_device_bytes`: the GPU's free memory (device_memory.h device_free_bytes), nullopt on the CPU.
///   CPU: "tiny" at 4 x 256 tokens (a few seconds a step on 2 cores; the GPU shapes would take hours).
///   GPU: 8 x 4096 tokens (issue 5's workload) and the largest named shape whose training state, fp32
///        weights + gradients + two AdamW moments = 16 bytes a parameter, takes at most half of the free
///        memory (the other half: checkpointed activations, logits chunks, allocator slack). Qwen3-4B's
///        4,022,468,096 parameters need 128.7 GB free (an H200 has ~140 GB), Qwen3-0.6B 19.1 GB, 100m
///        3.2 GB; below that "tiny".
StepBenchFit fit_step_bench(std::optional<int64_t> free_device_bytes);

/// Builds the random model (init_weights(seed), std 0.02) on options.device, a synthetic batch of
/// options.batch agent samples of options.seq + 1 tokens (uniform random ids; the first quarter context,
/// loss mask 0; the rest sampled, mask 1, rollout logprob -ln(vocab), a random model's own; advantages
/// +1 / -1 alternating), and runs warmup + timed grpo_update steps with AdamW (lr 1e-6, reference §5).
/// `dist` (optional) takes part in the step as in data-parallel training (its collectives run); each rank
/// steps on its own synthetic batch (seed + rank), so tokens and tokens_per_s are per rank.
/// Throws spade::Error for a bad device/autocast, options.sharding other than none without `dist`, or
/// when a loss or gradient norm is not finite.
StepBenchResult run_step_bench(const StepBenchOptions& options, const DistributedContext* dist = nullptr);

}  // namespace spade::trainer
