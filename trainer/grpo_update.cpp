#include "trainer/grpo_update.h"

#include <algorithm>
#include <chrono>
#include <optional>

#include "common/error.h"
#include "trainer/autocast.h"
#include "trainer/chunked_logprobs.h"

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
  if (chunk_rows > 0 && !(with_entropy && entropy_grad)) {
    // Chunked through the output projection (trainer/chunked_logprobs.h): no [B*T, V] logits.
    torch::Tensor entropy;
    torch::Tensor logp = chunked_token_logprobs(hidden.reshape({B * T, hidden.size(2)}), lm_head_weight(model),
                                                batch.targets.reshape({B * T}),
                                                batch.temperature.view({B, 1}).expand({B, T}).reshape({B * T}),
                                                chunk_rows, with_entropy ? &entropy : nullptr);
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

UpdateStats grpo_update(policy::Transformer& model, torch::optim::Optimizer& optimizer,
                        const std::vector<rollout::Sample>& samples, const UpdateOptions& options,
                        const DistributedContext* dist) {
  const auto start = std::chrono::steady_clock::now();
  const DistributedContext single;
  const DistributedContext& dp = dist ? *dist : single;
  UpdateStats stats;
  std::vector<const rollout::Sample*> trainable;
  for (const rollout::Sample& s : samples)
    if (s.tokens.size() >= 2 && s.num_trainable() > 0) trainable.push_back(&s);

  const bool bf16 = parse_autocast(options.autocast);
  const torch::Device device = model_device(model);
  std::vector<PackedBatch> batches = pack_micro_batches(trainable, options.micro_batch_tokens, device);
  std::vector<torch::Tensor> masks;
  for (const PackedBatch& b : batches) masks.push_back(b.loss_mask);
  // The exact global normaliser (policy_loss.h), summed over ranks before any backward pass.
  PolicyLossConfig loss = options.loss;
  if (dp.active() && loss.agg_mode == AggMode::DrGrpo && loss.max_len <= 0) {
    double longest = 0;
    for (const torch::Tensor& m : masks) longest = std::max<double>(longest, m.size(1));
    loss.max_len = static_cast<int64_t>(dp.all_reduce_max({longest})[0]);
  }
  const std::vector<double> global = dp.all_reduce_sum(
      {global_normaliser(loss.agg_mode, masks, loss.max_len), static_cast<double>(trainable.size())});
  const double normaliser = global[0];
  if (global[1] == 0) return stats;  // the same answer on every rank: nobody steps
  const bool with_kl = loss.kl_coef != 0.0;
  if (with_kl && !options.reference)
    throw Error("grpo_update: loss.kl_coef is " + std::to_string(loss.kl_coef) +
                " but no reference policy was given (UpdateOptions::reference)");

  model->train();
  optimizer.zero_grad();
  double pg_loss = 0, ent = 0, kl = 0, clip_tokens = 0, kl_tokens = 0, tis_tokens = 0, tis_clip_tokens = 0,
         diff_tokens = 0, tokens = 0;
  for (const PackedBatch& b : batches) {
    PolicyLossTerms terms;
    {
      // Forward passes under autocast (a no-op scope for "none"); backward runs outside it, as with
      // torch.autocast: autograd replays each op in the dtype its forward used.
      AutocastScope autocast(device, bf16);
      auto [logp, entropy] = sequence_logprobs(model, b, /*with_entropy=*/true,
                                               /*entropy_grad=*/loss.entropy_coef != 0.0, options.logprob_chunk_rows);
      torch::Tensor old_logp = logp.detach();
      torch::Tensor ref_logp;  // undefined unless the loss has a KL penalty
      if (with_kl) {
        torch::NoGradGuard no_grad;
        policy::Transformer reference = options.reference;  // a handle to the same frozen module
        ref_logp = sequence_logprobs(reference, b, /*with_entropy=*/false, false, options.logprob_chunk_rows).first;
      }
      terms = compute_policy_loss(logp, old_logp, b.rollout_logp, b.advantages, b.loss_mask, normaliser, loss,
                                  entropy, ref_logp);
    }
    terms.loss.backward();
    pg_loss += terms.pg_loss;
    ent += terms.entropy;
    kl += terms.kl;
    const double n = static_cast<double>(terms.num_tokens);
    clip_tokens += terms.pg_clipfrac * n;
    kl_tokens += terms.ppo_kl * n;
    tis_tokens += terms.tis_mean * n;
    tis_clip_tokens += terms.tis_clipfrac * n;
    diff_tokens += terms.rollout_logp_abs_diff * n;
    tokens += n;
  }
  // Sum of the ranks' gradients = the whole-batch gradient; then the global norm is clipped.
  dp.all_reduce_gradients(model->parameters());
  std::vector<torch::Tensor> params;
  for (auto& p : model->parameters())
    if (p.grad().defined()) params.push_back(p);
  stats.grad_norm = options.grad_clip > 0
                        ? torch::nn::utils::clip_grad_norm_(params, options.grad_clip)
                        : torch::nn::utils::clip_grad_norm_(params, 1e30);
  optimizer.step();
  optimizer.zero_grad();

  const std::vector<double> sums = dp.all_reduce_sum(
      {pg_loss, ent, clip_tokens, kl_tokens, tis_tokens, tis_clip_tokens, diff_tokens, tokens,
       static_cast<double>(batches.size()), kl});
  const double n = std::max(1.0, sums[7]);
  stats.pg_loss = sums[0];
  stats.entropy = sums[1];
  stats.pg_clipfrac = sums[2] / n;
  stats.ppo_kl = sums[3] / n;
  stats.tis_mean = sums[4] / n;
  stats.tis_clipfrac = sums[5] / n;
  stats.rollout_logp_abs_diff = sums[6] / n;
  stats.num_tokens = static_cast<int64_t>(sums[7]);
  stats.num_samples = static_cast<int64_t>(global[1]);
  stats.num_micro_batches = static_cast<int64_t>(sums[8]);
  stats.kl = sums[9];
  stats.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return stats;
}

}  // namespace spade::trainer
