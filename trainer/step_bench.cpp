#include "trainer/step_bench.h"

#include "common/process_stats.h"

#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <random>

#include "common/error.h"
#include "trainer/config_bridge.h"
#include "trainer/device.h"
#include "trainer/device_memory.h"
#include "trainer/grpo_update.h"
#include "trainer/sharded_optimizer.h"

namespace spade::trainer {

std::vector<rollout::Sample> synthetic_grpo_batch(int64_t vocab, int batch, int seq, double temperature, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int64_t> token(0, vocab - 1);
  std::normal_distribution<double> noise(0.0, 0.3);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  const int64_t len = seq + 1;
  std::vector<rollout::Sample> out(batch);
  for (rollout::Sample& s : out) {
    s.temperature = temperature;
    const int64_t prompt = seq / 4 + static_cast<int64_t>(rng() % std::max(1, seq / 4));
    bool sampled = false;
    int64_t chunk = prompt;
    while (static_cast<int64_t>(s.tokens.size()) < len) {
      for (int64_t i = 0; i < chunk && static_cast<int64_t>(s.tokens.size()) < len; ++i) {
        s.tokens.push_back(token(rng));
        s.loss_mask.push_back(sampled ? 1.f : 0.f);
        s.rollout_logprobs.push_back(sampled ? static_cast<float>(std::min(0.0, -std::log(double(vocab)) + noise(rng)))
                                             : 0.f);
      }
      sampled = !sampled;
      chunk = sampled ? 16 + static_cast<int64_t>(rng() % 48) : 8 + static_cast<int64_t>(rng() % 24);
    }
  }
  for (size_t g = 0; g < out.size(); g += 4) {
    const size_t end = std::min(out.size(), g + 4);
    double mean = 0, var = 0;
    for (size_t i = g; i < end; ++i) mean += (out[i].reward = unit(rng));
    mean /= double(end - g);
    for (size_t i = g; i < end; ++i) var += (out[i].reward - mean) * (out[i].reward - mean);
    const double sd = std::sqrt(var / double(end - g));
    for (size_t i = g; i < end; ++i) out[i].advantage = (out[i].reward - mean) / (sd + 1e-8);
  }
  return out;
}

double train_flops_per_token(const policy::ModelConfig& c, int64_t seq) {
  const double h = c.hidden_size, d = c.head_size(), nh = c.num_attention_heads, kv = c.kv_heads();
  const double L = c.num_hidden_layers;
  double matmul_weights = static_cast<double>(c.vocab_size) * h;  // output projection
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
    matmul_weights += h * nh * d + 2 * h * kv * d + nh * d * h;  // q, k, v, o projections
    matmul_weights += c.is_moe_layer(i)
                          ? h * c.num_experts + 3 * h * c.moe_intermediate_size * c.num_experts_per_tok  // router + active experts
                          : 3 * h * c.intermediate_size;                                                  // gate, up, down
  }
  return 6 * matmul_weights + 12 * L * nh * d * static_cast<double>(seq);
}

double update_mfu(const policy::ModelConfig& model, const std::vector<rollout::Sample>& samples, double seconds,
                  double peak_tflops) {
  if (!(seconds > 0) || !(peak_tflops > 0)) return 0.0;
  double flops = 0;
  for (const rollout::Sample& s : samples) {
    const auto len = static_cast<int64_t>(s.tokens.size());
    flops += train_flops_per_token(model, len) * static_cast<double>(len);
  }
  return flops / seconds / (peak_tflops * 1e12);
}

StepBenchFit fit_step_bench(std::optional<int64_t> free_device_bytes) {
  if (!free_device_bytes) return {"tiny", 4, 256, "on the CPU: the tiny shape at 4 x 256 tokens"};
  const std::vector<std::string>& names = policy::model_shape_names();  // smallest first
  for (auto name = names.rbegin(); name != names.rend(); ++name) {
    const int64_t state_bytes = 16 * policy::named_model_shape(*name).num_parameters();
    if (2 * state_bytes <= *free_device_bytes)
      return {*name, 8, 4096,
              "the largest shape whose weights, gradients and AdamW moments (" +
                  std::to_string(state_bytes / 1000000) + " MB) take at most half of the GPU's " +
                  std::to_string(*free_device_bytes / 1000000) + " MB free"};
  }
  return {"tiny", 8, 4096,
          "no larger shape's training state fits in half of the GPU's " +
              std::to_string(*free_device_bytes / 1000000) + " MB free"};
}

StepBenchResult run_step_bench(const StepBenchOptions& o, const DistributedContext* dist) {
  if (o.batch < 1 || o.seq < 2 || o.steps < 1 || o.warmup_steps < 0)
    throw Error("step bench: batch >= 1, seq >= 2, steps >= 1 and warmup >= 0 required");
  StepBenchResult r;
  const torch::Device device = resolve_train_device(o.device, dist ? dist->local_rank() : 0);
  make_current(device);
  r.device = device.str();
  policy::ModelConfig c = o.model;
  c.max_position_embeddings = std::max<int64_t>(c.max_position_embeddings, o.seq + 1);
  policy::Transformer model(c);
  model->init_weights(o.seed, 0.02);
  model->to(device);
  model->set_activation_checkpointing(o.activation_checkpointing);
  model->set_attention_backend(policy::parse_attention_backend(o.attention, "step bench: attention"));
  r.params = c.num_parameters();
  r.tokens = static_cast<int64_t>(o.batch) * o.seq;
  r.flops_per_token = train_flops_per_token(c, o.seq);

  // The self-play optimizer's defaults; sharded over `dist` as the trainer does (config_bridge.h).
  if (o.sharding != "none" && !dist)
    throw Error("step bench: sharding " + o.sharding + " needs a process group (--group, or --nproc)");
  const DistributedContext single;
  std::unique_ptr<torch::optim::Optimizer> optimizer =
      make_optimizer(model, OptimConfig{}, o.sharding, dist ? *dist : single, c10::nullopt, o.prefetch);
  r.world_size = dist ? dist->world_size() : 1;
  UpdateOptions update;
  update.micro_batch_tokens = o.micro_batch_tokens;
  update.logprob_chunk_rows = o.logprob_chunk_rows;
  update.loss.entropy_coef = o.entropy_coef;
  update.autocast = o.autocast;
  const std::vector<rollout::Sample> batch = synthetic_grpo_batch(c.vocab_size, o.batch, o.seq, 1.0,
                                                                    o.seed + 1 + (dist ? dist->rank() : 0));
  for (int s = 0; s < o.warmup_steps + o.steps; ++s) {
    if (s == o.warmup_steps) reset_device_memory_peaks(device);  // peaks of the timed steps only
    const auto t0 = std::chrono::steady_clock::now();
    const UpdateStats st = grpo_update(model, *optimizer, batch, update, dist);
    // .item() waits for the device's queued work (CUDA: a stream sync), so the time covers the step.
    const double check = model->parameters().front().sum().item<double>();
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (!std::isfinite(st.pg_loss) || !std::isfinite(st.grad_norm) || !std::isfinite(check))
      throw Error("step bench: step " + std::to_string(s) + " produced a non-finite loss, gradient norm or weight");
    if (s < o.warmup_steps) continue;
    if (r.step_s.empty()) {
      r.pg_loss = st.pg_loss;
      r.grad_norm = st.grad_norm;
      r.micro_batches = st.num_micro_batches;
    }
    r.step_s.push_back(secs);
  }
  std::vector<double> sorted = r.step_s;
  std::sort(sorted.begin(), sorted.end());
  const double median = sorted[sorted.size() / 2];
  r.tokens_per_s = static_cast<double>(r.tokens) / median;
  r.mfu = r.tokens_per_s * r.flops_per_token / (o.peak_tflops * 1e12);
  r.peak_rss_mb = static_cast<double>(peak_rss_bytes()) / (1 << 20);
  r.optimizer_state_bytes = adamw_state_bytes(*optimizer);
  if (const auto* sharded = dynamic_cast<const ShardedAdamW*>(optimizer.get()); sharded && sharded->sharded_model())
    r.prefetched_gathers = sharded->parameter_shards().prefetched_gathers();
  if (const std::optional<DeviceMemoryPeaks> gpu = device_memory_peaks(device)) {
    r.peak_gpu_allocated_mb = static_cast<double>(gpu->max_allocated_bytes) / (1 << 20);
    r.peak_gpu_reserved_mb = static_cast<double>(gpu->max_reserved_bytes) / (1 << 20);
  }
  return r;
}

}  // namespace spade::trainer
