#include "trainer/memory_estimate.h"

#include <algorithm>
#include <cstdio>

#include "common/error.h"
#include "trainer/sharding.h"

namespace spade::trainer {

namespace {

// Saved activations of decoder layer `i` per token (memory_estimate.h lists the terms and where they
// come from). `row` is the longest row of a micro-batch (the matmul path's score matrix is row-wide).
int64_t layer_bytes_per_token(const policy::ModelConfig& m, int64_t i, bool autocast, bool fused, int64_t row) {
  const int64_t h = m.hidden_size, q = m.num_attention_heads * m.head_size(), k = m.kv_heads() * m.head_size();
  const int64_t a = autocast ? 2 : 4;  // matmul outputs and the bf16 casts autocast saves
  const bool moe = m.is_moe_layer(i);
  int64_t b = 0;
  // Attention RMSNorm: input and normalised (fp32), and what q/k/v read: the fp32 output once, or under
  // autocast one bf16 cast per projection.
  b += 8 * h + (autocast ? 3 * 2 * h : 4 * h);
  if (m.qk_norm) b += autocast ? 6 * q + 6 * k : 8 * q + 8 * k;  // fp32 input + normalised (bf16 under autocast)
  if (fused) {
    const int64_t kv = m.kv_heads() < m.num_attention_heads ? q : k;  // K and V expanded to the query heads
    b += a * (3 * q + 2 * kv);                                        // q, K, V, output, o_proj input
  } else {
    b += a * (2 * q + 2 * k);                                         // q, K, V, o_proj input
    b += m.num_attention_heads * row * (autocast ? 6 : 4);            // softmax (fp32, + its bf16 copy)
  }
  // MLP RMSNorm: input and normalised, and what the MLP reads.
  if (!moe) {
    b += 8 * h + (autocast ? 2 * 2 * h : 4 * h);
    b += 4 * a * m.intermediate_size;  // gate, silu, up, product
  } else {
    b += 8 * h + (autocast ? 2 * h : 4 * h);  // the router reads the norm's output
    b += 4 * m.num_experts;                  // router softmax, fp32
    b += m.num_experts_per_tok * (4 * a * m.moe_intermediate_size + a * h + 4 * h);
  }
  return b;
}

// Parameters that enter a matmul (bf16 copies under autocast): every projection, router and expert of
// layer i; the output projection (the embedding itself when tied) is vocab x hidden.
int64_t layer_matmul_parameters(const policy::ModelConfig& m, int64_t i) {
  const int64_t h = m.hidden_size, q = m.num_attention_heads * m.head_size(), k = m.kv_heads() * m.head_size();
  return 2 * h * q + 2 * h * k +
         (m.is_moe_layer(i) ? m.num_experts * h * (1 + 3 * m.moe_intermediate_size) : 3 * h * m.intermediate_size);
}

int64_t matmul_parameters(const policy::ModelConfig& m) {
  int64_t n = m.vocab_size * m.hidden_size;
  for (int64_t i = 0; i < m.num_hidden_layers; ++i) n += layer_matmul_parameters(m, i);
  return n;
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// "3.2 GiB", or "120.5 MiB" below 1 GiB.
std::string gib(int64_t bytes) {
  char buf[32];
  if (bytes < (1LL << 30))
    std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(bytes) / (1LL << 20));
  else
    std::snprintf(buf, sizeof buf, "%.1f GiB", static_cast<double>(bytes) / (1LL << 30));
  return buf;
}

std::string count(int64_t x) {  // 8190735360 -> "8,190,735,360"
  std::string s = std::to_string(x), out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (i > 0 && (s.size() - i) % 3 == 0) out += ',';
    out += s[i];
  }
  return out;
}

// The estimate under c.distributed.sharding alone (peak_by_sharding left empty).
MemoryEstimate estimate_one(const policy::ModelConfig& m, const Config& c, int world_size, bool cuda) {
  if (world_size < 1) throw Error("estimate_memory: world size must be >= 1, got " + std::to_string(world_size));
  MemoryEstimate e;
  e.world_size = world_size;
  e.autocast = c.train.autocast == "bf16";
  e.checkpointing = c.train.activation_checkpointing;
  e.fused_attention = c.train.attention == "sdpa" || (c.train.attention == "auto" && cuda);
  e.parameters = m.num_parameters();
  e.matmul_parameters = matmul_parameters(m);

  // Training state, fp32.
  e.weights = 4 * e.parameters;
  e.gradients = 4 * e.parameters;
  e.sharding = sharding_name(parse_sharding(c.distributed.sharding));
  if (e.sharding == "gradients") {
    const int64_t h = m.hidden_size;
    const int64_t largest = std::max({m.vocab_size * h, m.intermediate_size * h, m.moe_intermediate_size * h,
                                      m.num_attention_heads * m.head_size() * h});
    e.gradient_bucket = std::max(static_cast<int64_t>(c.distributed.bucket_mb * (1 << 20)), 4 * largest);
    e.gradients = 4 * shard_capacity(e.parameters, world_size) + 2 * e.gradient_bucket;
  }
  // AdamW's two fp32 moments: all of them, or this rank's padded shard of ceil(P / N) elements.
  e.optimizer = 8 * (e.sharding == "none" ? e.parameters : shard_capacity(e.parameters, world_size));
  e.kl_reference = c.loss.kl_coef != 0 ? 4 * e.parameters : 0;
  e.autocast_weights = e.autocast ? 2 * e.matmul_parameters : 0;
  if (e.sharding == "full") {
    // ZeRO-3 (trainer/parameter_shards.h): this rank's master-weight shard, plus during the update the
    // root (embeddings, norm, lm_head) whole for the step and one layer whole at a time with the next
    // layer's prefetched chunks (or, while they are joined, the joined layer); gradients: the summed shard, the root's .grad, and
    // one layer's gradients with their padded flat copy for the reduce-scatter. Autocast's bf16 copies
    // are dropped as each layer is released: one layer's and the output projection's.
    int64_t layer = 0, layer_matmul = 0;
    for (int64_t i = 0; i < m.num_hidden_layers; ++i) {
      layer = std::max(layer, m.layer_parameters(i));
      layer_matmul = std::max(layer_matmul, layer_matmul_parameters(m, i));
    }
    e.largest_layer = layer;
    e.root_parameters = m.root_parameters();
    e.weights = 4 * shard_capacity(e.parameters, world_size);
    e.gathered = 4 * e.root_parameters + 2 * 4 * layer;
    e.gradients = 4 * shard_capacity(e.parameters, world_size) + 4 * e.root_parameters + 2 * 4 * layer;
    e.autocast_weights = e.autocast ? 2 * (layer_matmul + m.vocab_size * m.hidden_size) : 0;
    // The rollouts' inference copy: every parameter whole, in distributed.inference_dtype (fp32 or
    // bf16) as the sampler runs them, all-gathered after each update and held for the rollout phase only.
    e.inference_bytes = c.distributed.inference_dtype == "bf16" ? 2 : 4;
    e.inference_copy = e.inference_bytes * e.parameters;
    // The KL reference is sharded too (shard_frozen_model): its shard, and its root whole during the
    // update (its layers are gathered one at a time while the policy's are released: within `gathered`).
    if (e.kl_reference) {
      e.kl_reference = 4 * shard_capacity(e.parameters, world_size);
      e.gathered += 4 * e.root_parameters;
    }
  }

  // Activations of one micro-batch of N tokens.
  const SelfPlayConfig& sp = c.selfplay;
  e.row_tokens = std::max<int64_t>(sp.context_tokens, sp.designer.max_new_tokens);
  e.micro_batch_tokens = std::max<int64_t>(c.optim.micro_batch_tokens, e.row_tokens);
  const int64_t N = e.micro_batch_tokens, T = std::min(e.row_tokens, N), h = m.hidden_size;
  int64_t all_layers = 0, widest = 0;
  for (int64_t i = 0; i < m.num_hidden_layers; ++i) {
    const int64_t b = layer_bytes_per_token(m, i, e.autocast, e.fused_attention, T);
    all_layers += b;
    widest = std::max(widest, b);
  }
  e.layer_bytes_per_token = widest;
  const int64_t per_token = e.checkpointing ? m.num_hidden_layers * 4 * h + widest : all_layers;
  e.activations = N * (per_token + 12 * h);               // + the final RMSNorm
  if (!e.fused_attention) e.activations += N * T;         // the causal mask, one byte per key per query
  // Output projection and logprobs.
  const int64_t V = m.vocab_size, rows = c.optim.logprob_chunk_rows;
  if (rows > 0)
    e.logits = std::min<int64_t>(rows, N) * V * (e.autocast ? 10 : 8) + V * h * (e.autocast ? 6 : 4);
  else
    e.logits = N * V * (e.autocast ? 10 : 8);

  // Rollout KV cache in the sampler's dtype (the inference copy's; fp32 otherwise), every play of this
  // rank at full context (the worst case).
  e.kv_bytes_per_token = 2 * m.num_hidden_layers * m.kv_heads() * m.head_size() * e.inference_bytes;
  const bool pool = sp.mode == "fixed_pool";
  const int64_t envs_here = ceil_div(sp.envs_per_regen, world_size);
  e.plays_per_rank = envs_here * std::max(sp.plays_per_env, pool ? 0 : sp.hint_plays);
  const int64_t plays_tokens = e.plays_per_rank * sp.context_tokens;
  const int64_t designer_tokens =
      pool ? 0 : std::min<int64_t>(sp.max_batch, envs_here) * sp.designer.max_new_tokens;
  e.kv_cache = std::max(plays_tokens, designer_tokens) * e.kv_bytes_per_token;

  e.update_phase = e.weights + e.gathered + e.gradients + e.optimizer + e.kl_reference + e.autocast_weights +
                   e.activations + e.logits;
  e.rollout_phase = e.weights + e.inference_copy + e.optimizer + e.kl_reference + e.kv_cache;
  e.peak = std::max(e.update_phase, e.rollout_phase);
  return e;
}

}  // namespace

MemoryEstimate estimate_memory(const policy::ModelConfig& m, const Config& c, int world_size, bool cuda) {
  MemoryEstimate e = estimate_one(m, c, world_size, cuda);
  for (const char* mode : {"none", "optimizer", "gradients", "full"}) {
    Config other = c;
    other.distributed.sharding = mode;
    const MemoryEstimate o = mode == e.sharding ? e : estimate_one(m, other, world_size, cuda);
    e.by_sharding.push_back({mode, o.training_state(), o.peak});
  }
  return e;
}

std::string sharding_needed(const MemoryEstimate& e, const MemoryBudget& budget, bool state_only) {
  if (budget.bytes <= 0) return "";
  for (const MemoryEstimate::ShardingFit& f : e.by_sharding)
    if ((state_only ? f.state : f.peak) <= budget.bytes) return f.mode;
  return "";
}

std::string describe_memory(const MemoryEstimate& e, const MemoryBudget& budget) {
  auto line = [](const std::string& name, int64_t bytes, const std::string& how) {
    return "  " + name + ": " + gib(bytes) + " (" + how + ")\n";
  };
  std::string s;
  const std::string N = std::to_string(e.world_size);
  const bool full = e.sharding == "full";
  s += line("weights", e.weights,
            full ? "this rank's fp32 shard of " + count(e.parameters) + " parameters, ceil(P / " + N +
                       ") x 4 B (distributed.sharding full)"
                 : count(e.parameters) + " parameters x 4 B, fp32");
  if (full)
    s += line("gathered for the update", e.gathered,
              "the root unit (embeddings, norm, lm_head: " + count(e.root_parameters) + ") whole, and the largest layer (" +
                  count(e.largest_layer) + ") with the next layer's prefetched chunks, fp32" +
                  (e.kl_reference ? "; the KL reference's root whole" : ""));
  s += line("gradients", e.gradients,
            e.sharding == "gradients"
                ? "this rank's shard, ceil(P / " + N + ") x 4 B, and during backward " +
                      "one bucket of " + gib(e.gradient_bucket) + " with its flat copy (distributed.sharding gradients)"
            : full ? "this rank's shard, ceil(P / " + N + ") x 4 B, the root's and one layer's with its flat copy"
                   : "fp32, as the weights");
  s += line("optimizer state", e.optimizer,
            e.sharding == "none" ? "AdamW exp_avg + exp_avg_sq, 2 x 4 B fp32 per parameter"
                                 : "AdamW exp_avg + exp_avg_sq of this rank's shard, ceil(P / " +
                                       std::to_string(e.world_size) + ") x 2 x 4 B (distributed.sharding " +
                                       e.sharding + ")");
  if (e.kl_reference)
    s += line("KL reference policy", e.kl_reference,
              full ? "this rank's fp32 shard of the frozen copy, ceil(P / " + N + ") x 4 B, loss.kl_coef != 0"
                   : "a frozen fp32 copy, loss.kl_coef != 0");
  if (e.autocast_weights)
    s += line("autocast weight copies", e.autocast_weights,
              full ? std::string("bf16 copies of the largest layer's and the output projection's matmul weights")
                   : "bf16 copies of " + count(e.matmul_parameters) + " matmul weights, kept for backward");
  s += line("activations", e.activations,
            std::to_string(e.micro_batch_tokens) + "-token micro-batch = max(optim.micro_batch_tokens, longest row " +
                std::to_string(e.row_tokens) + "); " + (e.checkpointing ? "checkpointed: 4 h per layer + one layer of "
                                                                         : "no checkpointing: every layer's ") +
                count(e.layer_bytes_per_token) + " B per token; " + (e.fused_attention ? "fused attention" : "matmul attention"));
  s += line("logits", e.logits, "lm_head chunks of optim.logprob_chunk_rows rows and the lm_head gradient buffer");
  s += line("rollout KV cache", e.kv_cache,
            "worst case: " + std::to_string(e.plays_per_rank) + " plays of this rank at full context, " +
                count(e.kv_bytes_per_token) + " B per token in " + (e.inference_bytes == 2 ? "bf16" : "fp32"));
  if (full)
    s += line("rollout inference copy", e.inference_copy,
              std::string("every parameter whole in ") + (e.inference_bytes == 2 ? "bf16" : "fp32") +
                  " (distributed.inference_dtype) for the sampler, all-gathered after each update (rollout phase only)");
  s += "  update phase: " + gib(e.update_phase) + "; rollout phase: " + gib(e.rollout_phase) + " (they do not overlap)\n";
  s += "  peak per GPU: " + gib(e.peak) + "; data parallel over " + N + " rank(s) " +
       (e.sharding == "none" ? std::string("replicates the weights, gradients and optimizer state (distributed.sharding none)")
        : e.sharding == "optimizer"
            ? std::string("replicates the weights and the gradients, and shards the optimizer state (distributed.sharding optimizer)")
        : e.sharding == "gradients"
            ? std::string("replicates the weights, and shards the gradients and optimizer state (distributed.sharding gradients)")
            : std::string("shards the weights, gradients and optimizer state (distributed.sharding full)")) +
       "\n";
  std::string modes;
  for (const MemoryEstimate::ShardingFit& f : e.by_sharding)
    modes += (modes.empty() ? "" : "; ") + f.mode + ": state " + gib(f.state) + ", peak " + gib(f.peak);
  const std::string needed = sharding_needed(e, budget);
  const std::string state_needed = sharding_needed(e, budget, /*state_only=*/true);
  std::string verdict;
  if (budget.bytes > 0 && !needed.empty()) {
    verdict = "; needed here: " + needed;
  } else if (budget.bytes > 0) {
    verdict = "; no mode fits the peak; " +
              (state_needed.empty() ? std::string("no mode's training state fits")
                                    : "the training state fits with " + state_needed +
                                          " (activations, the rollout KV cache and inference copy are the rest, below)");
  }
  s += "  by distributed.sharding on " + std::to_string(e.world_size) + " rank(s): " + modes + verdict + "\n";
  if (budget.bytes <= 0) {
    s += "  fits: not checked (" + budget.source + ")\n";
    return s;
  }
  if (e.peak <= budget.bytes) {
    s += "  fits: yes, " + gib(e.peak) + " of " + gib(budget.bytes) + " (" + budget.source + ")\n";
    return s;
  }
  s += "  fits: NO, " + gib(e.peak) + " > " + gib(budget.bytes) + " (" + budget.source + ")";
  const int64_t state = e.training_state();
  if (state > budget.bytes) {
    s += ": the training state alone (weights, gradients, optimizer" + std::string(e.kl_reference ? ", KL reference" : "") +
         ", " + gib(state) + ") exceeds it" +
         (state_needed.empty() ? std::string(" in every sharding mode (more ranks: distributed.world_size)")
                               : "; distributed.sharding " + state_needed + " brings it under") + "\n";
    return s;
  }
  s += "\n";
  if (e.update_phase > budget.bytes) {
    std::string fixes;
    if (!e.checkpointing) fixes += "train.activation_checkpointing, ";
    if (!e.autocast) fixes += "train.autocast bf16, ";
    fixes += e.micro_batch_tokens > e.row_tokens
                 ? "a smaller optim.micro_batch_tokens"
                 : "shorter rows (selfplay.context_tokens: a row longer than optim.micro_batch_tokens is a micro-batch of its own)";
    s += "    the update phase needs " + gib(e.update_phase) + ": " + fixes + ", a larger GPU" +
         (needed.empty() || needed == e.sharding ? std::string() : " or distributed.sharding " + needed) + "\n";
  }
  if (e.rollout_phase > budget.bytes) {
    const int64_t left = budget.bytes - (e.weights + e.inference_copy + e.optimizer + e.kl_reference);
    const int64_t tokens = left > 0 ? left / e.kv_bytes_per_token : 0;
    s += "    the rollout phase fits only while this rank's cached plays hold at most " + count(tokens) +
         " KV tokens together (" + count(e.plays_per_rank ? tokens / e.plays_per_rank : 0) +
         " per play); more ranks (distributed.world_size) deal fewer plays to each\n";
  }
  return s;
}

}  // namespace spade::trainer
