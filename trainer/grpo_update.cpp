#include "trainer/grpo_update.h"

#include <algorithm>
#include <chrono>
#include <optional>

#include "common/error.h"
#include "trainer/autocast.h"
#include "trainer/chunked_logprobs.h"
#include "trainer/sharded_optimizer.h"

namespace spade::trainer {

std::vector<PackedBatch> pack_micro_batches(const std::vector<const rollout::Sample*>& input,
                                            int token_budget, const torch::Device& device) {
  // Length-sorted packing wastes the least padding; the loss does not depend on the order because
  // it is normalised over the whole batch.
  std::vector<const rollout::Sample*> samples = input;
  std::stable_sort(samples.begin(), samples.end(), [](const rollout::Sample* a, const rollout::Sample* b) {
    return a->tokens.size() < b->tokens.size();
  });
  std::vector<std::vector<const rollout::Sample*>> groups;
  std::vector<const rollout::Sample*> current;
  size_t current_max = 0;
  for (const rollout::Sample* s : samples) {
    const size_t len = s->tokens.size() - 1;
    const size_t new_max = std::max(current_max, len);
    if (!current.empty() && new_max * (current.size() + 1) > static_cast<size_t>(token_budget)) {
      groups.push_back(std::move(current));
      current.clear();
      current_max = 0;
    }
    current.push_back(s);
    current_max = std::max(current_max, len);
  }
  if (!current.empty()) groups.push_back(std::move(current));

  std::vector<PackedBatch> out;
  for (const auto& g : groups) {
    int64_t T = 0;
    for (const rollout::Sample* s : g) T = std::max<int64_t>(T, s->tokens.size() - 1);
    const int64_t B = g.size();
    PackedBatch b;
    b.input_ids = torch::zeros({B, T}, torch::kLong);
    b.targets = torch::zeros({B, T}, torch::kLong);
    b.loss_mask = torch::zeros({B, T}, torch::kFloat);
    b.rollout_logp = torch::zeros({B, T}, torch::kFloat);
    b.advantages = torch::zeros({B, T}, torch::kFloat);
    b.temperature = torch::ones({B}, torch::kFloat);
    auto ids = b.input_ids.accessor<int64_t, 2>();
    auto tg = b.targets.accessor<int64_t, 2>();
    auto mk = b.loss_mask.accessor<float, 2>();
    auto lp = b.rollout_logp.accessor<float, 2>();
    auto adv = b.advantages.accessor<float, 2>();
    for (int64_t i = 0; i < B; ++i) {
      const rollout::Sample& s = *g[i];
      const int64_t n = s.tokens.size() - 1;
      for (int64_t t = 0; t < n; ++t) {
        ids[i][t] = s.tokens[t];
        tg[i][t] = s.tokens[t + 1];
        mk[i][t] = s.loss_mask[t + 1];
        lp[i][t] = s.rollout_logprobs[t + 1];
        adv[i][t] = static_cast<float>(s.advantage);
      }
      b.temperature[i] = static_cast<float>(s.temperature);
    }
    b.positions = torch::arange(T, torch::kLong).unsqueeze(0).expand({B, T}).contiguous();
    if (!device.is_cpu())  // filled through CPU accessors above; one copy per tensor to the model's device
      for (torch::Tensor* t : {&b.input_ids, &b.targets, &b.loss_mask, &b.rollout_logp, &b.advantages,
                               &b.temperature, &b.positions})
        *t = t->to(device);
    out.push_back(std::move(b));
  }
  return out;
}

torch::Device model_device(policy::Transformer& model) {
  for (const torch::Tensor& p : model->parameters()) return p.device();
  return torch::kCPU;
}

std::pair<torch::Tensor, torch::Tensor> sequence_logprobs(policy::Transformer& model,
                                                          const PackedBatch& batch, bool with_entropy,
                                                          bool entropy_grad, int64_t chunk_rows) {
  torch::Tensor hidden = model->forward(batch.input_ids, batch.positions);
  const int64_t B = hidden.size(0), T = hidden.size(1);
  if (chunk_rows > 0) {
    // Chunked through the output projection (trainer/chunked_logprobs.h): no [B*T, V] logits, also
    // with a differentiable entropy (its gradient is part of the chunked backward).
    torch::Tensor entropy;
    torch::Tensor logp = chunked_token_logprobs(hidden.reshape({B * T, hidden.size(2)}), lm_head_weight(model),
                                                batch.targets.reshape({B * T}),
                                                batch.temperature.view({B, 1}).expand({B, T}).reshape({B * T}),
                                                chunk_rows, with_entropy ? &entropy : nullptr, entropy_grad);
    return {logp.view({B, T}), with_entropy ? entropy.view({B, T}) : torch::Tensor()};
  }
  torch::Tensor logits = model->lm_head(hidden);  // [B,T,V] float32
  const int64_t V = logits.size(2);
  // One temperature for the whole micro-batch (the usual case) is passed to policy::token_logprobs,
  // the sampler's own definition. Mixed temperatures divide each row first: the same elementwise
  // division, so the values are identical either way.
  const float t0 = batch.temperature[0].item<float>();
  const bool uniform = (batch.temperature == t0).all().item<bool>();
  const double temperature = uniform ? t0 : 1.0;
  torch::Tensor flat = (uniform ? logits : logits / batch.temperature.view({B, 1, 1})).reshape({B * T, V});
  torch::Tensor logp =
      policy::token_logprobs(flat, batch.targets.reshape({B * T}), temperature).view({B, T});
  torch::Tensor entropy;
  if (with_entropy) {
    // A metric unless the loss has an entropy bonus: then no graph is kept for it.
    std::optional<torch::NoGradGuard> no_grad;
    if (!entropy_grad) no_grad.emplace();
    entropy = policy::token_entropy(entropy_grad ? flat : flat.detach(), temperature).view({B, T});
  }
  return {logp, entropy};
}

namespace {

// The trainable samples split IN ORDER into `m` contiguous slices whose sizes differ by at most one
// (the first n mod m slices get one extra sample): verl's mini-batch split without shuffling. The
// batch is designer samples first, so the first mini-batch carries them. Slices may be empty (n < m).
std::vector<std::vector<const rollout::Sample*>> split_in_order(const std::vector<const rollout::Sample*>& samples,
                                                                int m) {
  std::vector<std::vector<const rollout::Sample*>> out(m);
  const size_t n = samples.size(), base = n / m, extra = n % m;
  size_t at = 0;
  for (size_t j = 0; j < static_cast<size_t>(m); ++j) {
    const size_t size = base + (j < extra ? 1 : 0);
    out[j].assign(samples.begin() + at, samples.begin() + at + size);
    at += size;
  }
  return out;
}

// Per-rank sums of one update's terms, over micro-batches and optimizer steps (token means weighted).
struct TermSums {
  double pg_loss = 0, ent = 0, kl = 0, clip_tokens = 0, clip_lower_tokens = 0, kl_tokens = 0, tis_tokens = 0,
         tis_clip_tokens = 0, diff_tokens = 0, tokens = 0;
  void add(const PolicyLossTerms& terms) {
    pg_loss += terms.pg_loss;
    ent += terms.entropy;
    kl += terms.kl;
    const double n = static_cast<double>(terms.num_tokens);
    clip_tokens += terms.pg_clipfrac * n;
    clip_lower_tokens += terms.pg_clipfrac_lower * n;
    kl_tokens += terms.ppo_kl * n;
    tis_tokens += terms.tis_mean * n;
    tis_clip_tokens += terms.tis_clipfrac * n;
    diff_tokens += terms.rollout_logp_abs_diff * n;
    tokens += n;
  }
};

// The data-parallel gradient reduction and the global-norm clip; returns the pre-clip norm. A
// sharded optimizer (ZeRO-1/2, trainer/sharded_optimizer.h) reduces into its shard and clips across
// shards; otherwise every rank all-reduces the full gradients and clips them (clip <= 0: measure only).
double reduce_and_clip_gradients(torch::optim::Optimizer& optimizer, policy::Transformer& model,
                                 const DistributedContext& dp, double clip) {
  if (auto* sharded = dynamic_cast<ShardedAdamW*>(&optimizer)) return sharded->reduce_and_clip_gradients(clip);
  dp.all_reduce_gradients(model->parameters());
  std::vector<torch::Tensor> params;
  for (auto& p : model->parameters())
    if (p.grad().defined()) params.push_back(p);
  return torch::nn::utils::clip_grad_norm_(params, clip > 0 ? clip : 1e30);
}

}  // namespace

UpdateStats grpo_update(policy::Transformer& model, torch::optim::Optimizer& optimizer,
                        const std::vector<rollout::Sample>& samples, const UpdateOptions& options,
                        const DistributedContext* dist) {
  const auto start = std::chrono::steady_clock::now();
  const DistributedContext single;
  const DistributedContext& dp = dist ? *dist : single;
  const int num_mini = options.mini_batches;
  if (num_mini < 1)
    throw Error("grpo_update: UpdateOptions::mini_batches must be >= 1, got " + std::to_string(num_mini));
  UpdateStats stats;
  std::vector<const rollout::Sample*> trainable;
  for (const rollout::Sample& s : samples)
    if (s.tokens.size() >= 2 && s.num_trainable() > 0) trainable.push_back(&s);

  const bool bf16 = parse_autocast(options.autocast);
  const torch::Device device = model_device(model);
  // Mini-batch j of this rank: its j-th contiguous slice (one slice, the whole share, when M = 1).
  const std::vector<std::vector<const rollout::Sample*>> slices = split_in_order(trainable, num_mini);
  std::vector<std::vector<PackedBatch>> minis;
  for (const auto& slice : slices) minis.push_back(pack_micro_batches(slice, options.micro_batch_tokens, device));
  std::vector<std::vector<torch::Tensor>> masks(num_mini);
  for (int j = 0; j < num_mini; ++j)
    for (const PackedBatch& b : minis[j]) masks[j].push_back(b.loss_mask);
  // The exact global normaliser of each mini-batch (policy_loss.h), summed over ranks before any
  // backward pass. Dr.GRPO without loss.max_len: L is the longest row of the whole rollout batch
  // (every mini-batch and rank), one value shared by all M steps.
  PolicyLossConfig loss = options.loss;
  if (loss.agg_mode == AggMode::DrGrpo && loss.max_len <= 0 && (dp.active() || num_mini > 1)) {
    double longest = 0;
    for (const auto& ms : masks)
      for (const torch::Tensor& m : ms) longest = std::max<double>(longest, m.size(1));
    loss.max_len = static_cast<int64_t>(dp.all_reduce_max({longest})[0]);
  }
  std::vector<double> local;  // {normaliser_j, samples_j} per mini-batch
  for (int j = 0; j < num_mini; ++j) {
    local.push_back(global_normaliser(loss.agg_mode, masks[j], loss.max_len));
    local.push_back(static_cast<double>(slices[j].size()));
  }
  const std::vector<double> global = dp.all_reduce_sum(local);
  double global_samples = 0;
  for (int j = 0; j < num_mini; ++j) global_samples += global[2 * j + 1];
  if (global_samples == 0) return stats;  // the same answer on every rank: nobody steps
  const bool with_kl = loss.kl_coef != 0.0;
  if (with_kl && !options.reference)
    throw Error("grpo_update: loss.kl_coef is " + std::to_string(loss.kl_coef) +
                " but no reference policy was given (UpdateOptions::reference)");

  model->train();
  // ZeRO-2 reduces gradients bucket by bucket during each micro-batch's backward, ZeRO-3 also gathers
  // each layer's weights for its forward and backward (sharded_optimizer.h): every rank then runs as
  // many passes per mini-batch as the rank with the most micro-batches (rounds[j]; M > 1: rounds[M]
  // forward-only passes for the old logprobs), padding its own with idle ones.
  ShardedAdamW* in_backward = dynamic_cast<ShardedAdamW*>(&optimizer);
  if (in_backward && !in_backward->collective_passes()) in_backward = nullptr;
  std::vector<double> rounds(num_mini + 1, 0.0);
  if (in_backward) {
    for (int j = 0; j < num_mini; ++j) {
      rounds[j] = static_cast<double>(minis[j].size());
      rounds[num_mini] += num_mini > 1 ? rounds[j] : 0.0;
    }
    rounds = dp.all_reduce_max(rounds);
  }
  // M > 1: the old policy's logprobs of every sample, with the weights before the first step, under
  // no_grad (same packing, chunking and autocast as the training forwards below).
  std::vector<std::vector<torch::Tensor>> old_logps(num_mini);
  if (num_mini > 1) {
    torch::NoGradGuard no_grad;
    AutocastScope autocast(device, bf16);
    if (in_backward) in_backward->begin_step();
    double passes = 0;
    for (int j = 0; j < num_mini; ++j)
      for (const PackedBatch& b : minis[j]) {
        old_logps[j].push_back(
            sequence_logprobs(model, b, /*with_entropy=*/false, false, options.logprob_chunk_rows).first);
        passes += 1;
      }
    if (in_backward)
      for (; passes < rounds[num_mini]; passes += 1) in_backward->idle_forward();
  }
  // A sharded KL reference (ZeRO-3: trainer/parameter_shards.h shard_frozen_model): its root stays
  // gathered for the update; a rank short of micro-batches runs its idle forward between the policy's
  // idle forward and backward, where the others run the reference.
  auto* ref_shards = with_kl ? dynamic_cast<ParameterShards*>(options.reference->weights_provider()) : nullptr;
  if (ref_shards && !in_backward)
    throw Error("grpo_update: the KL reference is sharded (ZeRO-3) but the optimizer is not ShardedAdamW in mode full");
  if (ref_shards) ref_shards->begin_forwards();
  TermSums sums;
  double grad_norm_sum = 0, steps = 0, micro_batches = 0;
  for (int j = 0; j < num_mini; ++j) {
    if (global[2 * j + 1] == 0) continue;  // a globally empty mini-batch (n < M): no rank steps
    const double normaliser = global[2 * j];
    optimizer.zero_grad();
    if (in_backward) {
      in_backward->begin_backward_reduction();
      in_backward->begin_step();
    }
    for (size_t i = 0; i < minis[j].size(); ++i) {
      const PackedBatch& b = minis[j][i];
      PolicyLossTerms terms;
      {
        // Forward passes under autocast (a no-op scope for "none"); backward runs outside it, as with
        // torch.autocast: autograd replays each op in the dtype its forward used.
        AutocastScope autocast(device, bf16);
        auto [logp, entropy] = sequence_logprobs(model, b, /*with_entropy=*/true,
                                                 /*entropy_grad=*/loss.entropy_coef != 0.0, options.logprob_chunk_rows);
        // M = 1: the old policy is the current one (ratio exactly 1).
        torch::Tensor old_logp = num_mini > 1 ? old_logps[j][i] : logp.detach();
        torch::Tensor ref_logp;  // undefined unless the loss has a KL penalty
        if (with_kl) {
          torch::NoGradGuard no_grad;
          policy::Transformer reference = options.reference;  // a handle to the same frozen module
          ref_logp = sequence_logprobs(reference, b, /*with_entropy=*/false, false, options.logprob_chunk_rows).first;
        }
        terms = compute_policy_loss(logp, old_logp, b.rollout_logp, b.advantages, b.loss_mask, normaliser, loss,
                                    entropy, ref_logp);
      }
      if (in_backward) in_backward->expect_gradients_from(terms.loss);
      terms.loss.backward();
      if (in_backward) in_backward->end_micro_batch();
      sums.add(terms);
    }
    if (in_backward)  // the rounds this rank has no micro-batch for: its share of the gradients is zeros
      for (double r = static_cast<double>(minis[j].size()); r < rounds[j]; ++r) {
        in_backward->idle_forward();
        if (ref_shards) ref_shards->idle_forward();
        in_backward->idle_backward();
      }
    micro_batches += static_cast<double>(minis[j].size());
    // Sum of the ranks' gradients = the whole-mini-batch gradient; then the global norm is clipped.
    grad_norm_sum += reduce_and_clip_gradients(optimizer, model, dp, options.grad_clip);
    optimizer.step();
    optimizer.zero_grad();
    steps += 1;
  }
  if (ref_shards) ref_shards->end_forwards();

  const std::vector<double> total = dp.all_reduce_sum(
      {sums.pg_loss, sums.ent, sums.clip_tokens, sums.kl_tokens, sums.tis_tokens, sums.tis_clip_tokens,
       sums.diff_tokens, sums.tokens, micro_batches, sums.kl, sums.clip_lower_tokens});
  const double n = std::max(1.0, total[7]);
  // Additive terms and the grad norm: means over the optimizer steps (M = 1: the one step's values,
  // exactly; x * 1.0 == x).
  const double per_step = 1.0 / std::max(1.0, steps);
  stats.pg_loss = total[0] * per_step;
  stats.entropy = total[1] * per_step;
  stats.kl = total[9] * per_step;
  stats.pg_clipfrac = total[2] / n;
  stats.pg_clipfrac_lower = total[10] / n;
  stats.ppo_kl = total[3] / n;
  stats.tis_mean = total[4] / n;
  stats.tis_clipfrac = total[5] / n;
  stats.rollout_logp_abs_diff = total[6] / n;
  stats.num_tokens = static_cast<int64_t>(total[7]);
  stats.num_samples = static_cast<int64_t>(global_samples);
  stats.num_micro_batches = static_cast<int64_t>(total[8]);
  stats.num_optimizer_steps = static_cast<int64_t>(steps);
  stats.grad_norm = grad_norm_sum * per_step;
  stats.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return stats;
}

}  // namespace spade::trainer
