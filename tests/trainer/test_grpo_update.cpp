// The GRPO update on real model samples: on-policy TIS weights are 1, the micro-batch split does not
// change the gradient (exact global normaliser), an update moves logprobs the advantage's way, and
// PPO mini-batches (UpdateOptions::mini_batches) equal a hand-written loop and make the clip fire.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>

#include "common/error.h"

#include "tests/testing/tiny_policy.h"
#include "trainer/chunked_logprobs.h"
#include "trainer/grpo_update.h"

using namespace spade;
using namespace spade::trainer;

namespace {

// Samples whose rollout logprobs are the model's own (teacher-forced, temperature `temp`).
std::vector<rollout::Sample> on_policy_samples(policy::Transformer& model, int n, double temp) {
  std::vector<rollout::Sample> out;
  torch::manual_seed(3);
  for (int i = 0; i < n; ++i) {
    rollout::Sample s;
    const int64_t prompt = 3 + i, response = 4 + 2 * i;
    std::vector<int64_t> p, r;
    for (int64_t k = 0; k < prompt; ++k) p.push_back(5 + (k * 7 + i) % 50);
    for (int64_t k = 0; k < response; ++k) r.push_back(5 + (k * 11 + 3 * i) % 50);
    s.append_context(p);
    s.append_sampled(r, std::vector<float>(r.size(), 0.0f));
    s.temperature = temp;
    s.advantage = (i % 2 == 0) ? 1.0 : -0.5;
    out.push_back(s);
  }
  std::vector<const rollout::Sample*> ptrs;
  for (auto& s : out) ptrs.push_back(&s);
  torch::NoGradGuard ng;
  PackedBatch b = pack_micro_batches(ptrs, 1 << 20)[0];
  auto [logp, ent] = sequence_logprobs(model, b, false);
  for (size_t i = 0; i < out.size(); ++i)
    for (size_t t = 1; t < out[i].tokens.size(); ++t)
      if (out[i].loss_mask[t] > 0) out[i].rollout_logprobs[t] = logp[i][t - 1].item<float>();
  return out;
}

std::vector<torch::Tensor> grads_after_update(const std::vector<rollout::Sample>& samples, int budget,
                                              int64_t chunk_rows = 0, double entropy_coef = 0.0,
                                              std::vector<torch::Tensor>* logps = nullptr) {
  fixtures::TinyPolicy p = fixtures::make_tiny_policy(7);
  UpdateOptions o;
  o.loss.entropy_coef = entropy_coef;
  // grpo_update's accumulation, without the optimizer step, so the gradients can be compared.
  std::vector<const rollout::Sample*> ptrs;
  for (auto& s : samples) ptrs.push_back(&s);
  std::vector<PackedBatch> batches = pack_micro_batches(ptrs, budget);
  std::vector<torch::Tensor> masks;
  for (auto& b : batches) masks.push_back(b.loss_mask);
  const double norm = global_normaliser(o.loss.agg_mode, masks);
  for (auto& b : batches) {
    auto [logp, ent] = sequence_logprobs(p.model, b, entropy_coef != 0.0, /*entropy_grad=*/entropy_coef != 0.0, chunk_rows);
    if (logps) logps->push_back(logp.detach().clone());
    compute_policy_loss(logp, logp.detach(), b.rollout_logp, b.advantages, b.loss_mask, norm, o.loss, ent)
        .loss.backward();
  }
  std::vector<torch::Tensor> g;
  for (auto& prm : p.model->parameters()) g.push_back(prm.grad().clone());
  return g;
}

}  // namespace

TEST(GrpoUpdate, OnPolicyTisIsOne) {
  fixtures::TinyPolicy p = fixtures::make_tiny_policy(7);
  auto samples = on_policy_samples(p.model, 4, 0.6);
  torch::optim::AdamW opt(p.model->parameters(), torch::optim::AdamWOptions(1e-3));
  UpdateOptions o;
  UpdateStats s = grpo_update(p.model, opt, samples, o);
  // The rollout logprobs are the model's own at the same temperature: w = exp(0) = 1 (issue 4).
  EXPECT_NEAR(s.tis_mean, 1.0, 1e-5);
  EXPECT_NEAR(s.rollout_logp_abs_diff, 0.0, 1e-5);
  EXPECT_EQ(s.tis_clipfrac, 0.0);
  EXPECT_EQ(s.pg_clipfrac, 0.0);  // single PPO epoch: ratio exactly 1
  EXPECT_GT(s.grad_norm, 0.0);
  EXPECT_EQ(s.num_samples, 4);
}

TEST(GrpoUpdate, MicroBatchSplitDoesNotChangeGradients) {
  fixtures::TinyPolicy p = fixtures::make_tiny_policy(7);
  auto samples = on_policy_samples(p.model, 6, 1.0);
  auto whole = grads_after_update(samples, 1 << 20);
  auto split = grads_after_update(samples, 24);  // forces several micro-batches
  ASSERT_EQ(whole.size(), split.size());
  for (size_t i = 0; i < whole.size(); ++i)
    EXPECT_TRUE(torch::allclose(whole[i], split[i], 1e-5, 1e-7)) << "parameter " << i;
}

// pack_micro_batches: samples sorted by length, then cut so that rows x longest row <= the budget
// (padded tokens). Five samples of 6, 9, 4, 12, 7 tokens give rows of 5, 8, 3, 11, 6 positions;
// sorted 3, 5, 6, 8, 11. Budget 16, by hand: {3, 5} (2 x 5 = 10; adding 6 would be 3 x 6 = 18 > 16),
// {6, 8} (2 x 8 = 16), {11} (alone). Budget 8: {3, 5} (10 > 8, so {3}), then {5}, {6}, {8}, and 11 > 8
// still forms its own micro-batch.
TEST(GrpoUpdate, MicroBatchesArePackedUpToTheTokenBudget) {
  std::vector<rollout::Sample> samples;
  for (int len : {6, 9, 4, 12, 7}) {
    rollout::Sample s;
    s.append_context({5});
    s.append_sampled(std::vector<int64_t>(len - 1, 7), std::vector<float>(len - 1, -1.0f));
    samples.push_back(s);
  }
  std::vector<const rollout::Sample*> ptrs;
  for (auto& s : samples) ptrs.push_back(&s);
  auto shapes = [&](int budget) {
    std::vector<std::pair<int64_t, int64_t>> out;
    for (const PackedBatch& b : pack_micro_batches(ptrs, budget)) {
      out.emplace_back(b.input_ids.size(0), b.input_ids.size(1));
      EXPECT_TRUE(b.input_ids.size(0) == 1 || b.input_ids.numel() <= budget) << "budget " << budget;
    }
    return out;
  };
  using Shapes = std::vector<std::pair<int64_t, int64_t>>;
  EXPECT_EQ(shapes(16), (Shapes{{2, 5}, {2, 8}, {1, 11}}));
  EXPECT_EQ(shapes(8), (Shapes{{1, 3}, {1, 5}, {1, 6}, {1, 8}, {1, 11}}));
  EXPECT_EQ(shapes(1 << 20), (Shapes{{5, 11}}));
}

TEST(GrpoUpdate, PositiveAdvantageRaisesLogprob) {
  fixtures::TinyPolicy p = fixtures::make_tiny_policy(9);
  auto samples = on_policy_samples(p.model, 1, 1.0);
  samples[0].advantage = 1.0;
  auto before = on_policy_samples(p.model, 1, 1.0)[0].rollout_logprobs;
  torch::optim::SGD opt(p.model->parameters(), torch::optim::SGDOptions(0.5));
  grpo_update(p.model, opt, samples, {});
  auto after = on_policy_samples(p.model, 1, 1.0)[0].rollout_logprobs;
  double sb = 0, sa = 0;
  for (size_t t = 0; t < before.size(); ++t) {
    sb += before[t];
    sa += after[t];
  }
  EXPECT_GT(sa, sb);  // gradient ascent on A * logp with A > 0
}

// Chunked lm_head (issue 5): logits of at most 5 rows at a time, recomputed in backward; the
// logprobs and the gradients (tied embeddings) match the unchunked computation.
TEST(GrpoUpdate, ChunkedLogprobsMatchUnchunked) {
  fixtures::TinyPolicy p = fixtures::make_tiny_policy(7);
  auto samples = on_policy_samples(p.model, 3, 0.7);
  std::vector<torch::Tensor> lp_whole, lp_chunked;
  // Entropy bonus off: two identical unchunked runs with entropy_coef > 0 already differ by ~1e-4
  // relative here (open finding, see the trainer report), so it cannot anchor a strict comparison.
  const double ent_coef = 0.0;
  auto whole = grads_after_update(samples, 1 << 20, 0, ent_coef, &lp_whole);
  auto chunked = grads_after_update(samples, 1 << 20, 5, ent_coef, &lp_chunked);
  ASSERT_EQ(lp_whole.size(), lp_chunked.size());
  for (size_t i = 0; i < lp_whole.size(); ++i) EXPECT_TRUE(torch::allclose(lp_whole[i], lp_chunked[i], 1e-6, 1e-6));
  ASSERT_EQ(whole.size(), chunked.size());
  for (size_t i = 0; i < whole.size(); ++i)
    EXPECT_TRUE(torch::allclose(whole[i], chunked[i], 1e-5, 1e-7))
        << "parameter " << i << " max |diff| " << (whole[i] - chunked[i]).abs().max().item<double>() << " max |g| "
        << whole[i].abs().max().item<double>() << " ratio " << (chunked[i].sum() / whole[i].sum()).item<double>();
}

// chunked_token_logprobs against the whole-logits autograd computation it replaces (the reference:
// log_softmax(h W^T / tau) gathered at the targets, differentiated by LibTorch's own autograd), with
// per-row temperatures, an untied weight, 13 rows in chunks of 4 (a ragged last chunk) and a loss
// with arbitrary per-token weights.
TEST(ChunkedLogprobs, MatchWholeLogitsValuesAndGradients) {
  torch::manual_seed(3);
  const int64_t N = 13, H = 8, V = 50;
  torch::Tensor h0 = torch::randn({N, H}), w0 = torch::randn({V, H}) * 0.5;
  torch::Tensor targets = torch::randint(0, V, {N}, torch::kLong);
  torch::Tensor tau = torch::linspace(0.5, 1.5, N);
  torch::Tensor c = torch::randn({N});

  torch::Tensor h1 = h0.clone().requires_grad_(true), w1 = w0.clone().requires_grad_(true);
  torch::Tensor lp_all = torch::log_softmax(torch::matmul(h1, w1.t()) / tau.unsqueeze(1), -1);
  torch::Tensor logp1 = lp_all.gather(-1, targets.unsqueeze(1)).squeeze(1);
  torch::Tensor ent1 = -(lp_all.exp() * lp_all).sum(-1);
  (logp1 * c).sum().backward();

  torch::Tensor h2 = h0.clone().requires_grad_(true), w2 = w0.clone().requires_grad_(true), ent2;
  torch::Tensor logp2 = chunked_token_logprobs(h2, w2, targets, tau, 4, &ent2);
  (logp2 * c).sum().backward();

  EXPECT_TRUE(torch::allclose(logp1, logp2, 1e-5, 1e-6));
  EXPECT_TRUE(torch::allclose(ent1.detach(), ent2, 1e-5, 1e-6));
  EXPECT_FALSE(ent2.requires_grad());
  EXPECT_TRUE(torch::allclose(h1.grad(), h2.grad(), 1e-5, 1e-6)) << (h1.grad() - h2.grad()).abs().max().item<double>();
  EXPECT_TRUE(torch::allclose(w1.grad(), w2.grad(), 1e-5, 1e-6)) << (w1.grad() - w2.grad()).abs().max().item<double>();
}

// ------------------------------------------------------------------ PPO mini-batches (optim.mini_batches)

namespace {

std::vector<torch::Tensor> params_of(policy::Transformer& model) {
  std::vector<torch::Tensor> out;
  for (auto& p : model->parameters()) out.push_back(p.detach().clone());
  return out;
}

double max_abs_diff(const std::vector<torch::Tensor>& a, const std::vector<torch::Tensor>& b) {
  double d = 0;
  for (size_t i = 0; i < a.size(); ++i) d = std::max(d, (a[i] - b[i]).abs().max().item<double>());
  return d;
}

// The PPO mini-batch update written out by hand (independently of grpo_update's loop): the old
// logprobs of every sample with the weights before any step (no_grad), then for each contiguous half
// of the batch one step of compute_policy_loss (its own normaliser) + backward + global-norm clip 1.0
// + AdamW. One micro-batch per mini-batch, whole-logits lm_head. Returns each step's loss terms.
std::vector<PolicyLossTerms> reference_two_mini_batches(policy::Transformer& model, torch::optim::Optimizer& opt,
                                                        const std::vector<rollout::Sample>& samples,
                                                        const PolicyLossConfig& cfg) {
  const size_t half = samples.size() / 2;
  std::vector<PackedBatch> mini;
  for (size_t j = 0; j < 2; ++j) {
    std::vector<const rollout::Sample*> ptrs;
    for (size_t i = j * half; i < (j + 1) * half; ++i) ptrs.push_back(&samples[i]);
    mini.push_back(pack_micro_batches(ptrs, 1 << 20)[0]);
  }
  std::vector<torch::Tensor> old;
  {
    torch::NoGradGuard ng;
    for (const PackedBatch& b : mini) old.push_back(sequence_logprobs(model, b, false).first);
  }
  std::vector<PolicyLossTerms> out;
  for (size_t j = 0; j < 2; ++j) {
    opt.zero_grad();
    const double norm = global_normaliser(cfg.agg_mode, {mini[j].loss_mask});
    torch::Tensor logp = sequence_logprobs(model, mini[j], false).first;
    PolicyLossTerms terms =
        compute_policy_loss(logp, old[j], mini[j].rollout_logp, mini[j].advantages, mini[j].loss_mask, norm, cfg);
    terms.loss.backward();
    torch::nn::utils::clip_grad_norm_(model->parameters(), 1.0);
    opt.step();
    out.push_back(terms);
  }
  return out;
}

UpdateOptions mini_batch_options(int m) {
  UpdateOptions o;
  o.mini_batches = m;
  o.logprob_chunk_rows = 0;        // the reference uses the whole-logits path
  o.micro_batch_tokens = 1 << 20;  // one micro-batch per mini-batch, as in the reference
  return o;
}

}  // namespace

// Expected values: the hand-written loop above (old logprobs once, two steps). Off-policy rollout
// logprobs (the model's own minus 0.1 per token) so the TIS weights exp(old - rollout) = e^0.1 are
// not 1 and must come from the precomputed old logprobs.
TEST(GrpoUpdate, TwoMiniBatchesEqualHandWrittenLoop) {
  fixtures::TinyPolicy a = fixtures::make_tiny_policy(7), b = fixtures::make_tiny_policy(7);
  auto samples = on_policy_samples(a.model, 4, 1.0);
  for (auto& s : samples)
    for (size_t t = 1; t < s.tokens.size(); ++t)
      if (s.loss_mask[t] > 0) s.rollout_logprobs[t] -= 0.1f;
  torch::optim::AdamW opt_a(a.model->parameters(), torch::optim::AdamWOptions(1e-2));
  torch::optim::AdamW opt_b(b.model->parameters(), torch::optim::AdamWOptions(1e-2));
  const UpdateOptions o = mini_batch_options(2);
  const UpdateStats s = grpo_update(a.model, opt_a, samples, o);
  const std::vector<PolicyLossTerms> ref = reference_two_mini_batches(b.model, opt_b, samples, o.loss);
  EXPECT_LT(max_abs_diff(params_of(a.model), params_of(b.model)), 1e-6);
  EXPECT_EQ(s.num_optimizer_steps, 2);
  EXPECT_EQ(s.num_samples, 4);
  EXPECT_EQ(s.num_micro_batches, 2);
  EXPECT_EQ(s.num_tokens, ref[0].num_tokens + ref[1].num_tokens);
  // UpdateStats: additive terms are means over the steps, token fractions token-weighted.
  EXPECT_NEAR(s.pg_loss, 0.5 * (ref[0].pg_loss + ref[1].pg_loss), 1e-6);
  const double n0 = ref[0].num_tokens, n1 = ref[1].num_tokens;
  EXPECT_NEAR(s.tis_mean, (ref[0].tis_mean * n0 + ref[1].tis_mean * n1) / (n0 + n1), 1e-6);
  EXPECT_NEAR(ref[0].tis_mean, std::exp(0.1), 1e-5);  // step 1: old = the weights before = rollout + 0.1

  // A single step on the whole batch (M = 1) is a different update: the test can tell them apart.
  fixtures::TinyPolicy c = fixtures::make_tiny_policy(7);
  torch::optim::AdamW opt_c(c.model->parameters(), torch::optim::AdamWOptions(1e-2));
  const UpdateStats one = grpo_update(c.model, opt_c, samples, mini_batch_options(1));
  EXPECT_EQ(one.num_optimizer_steps, 1);
  EXPECT_GT(max_abs_diff(params_of(a.model), params_of(c.model)), 1e-4);
}

// With a large learning rate the first step moves the policy far, so in the second mini-batch the
// ratio exp(logp - old_logp) leaves [1 - eps_low, 1 + eps_high] and the clip fires; M = 1 never
// clips (ratio exactly 1). The dual clip with c = 1.01 is active wherever A < 0 and r > 1.01.
TEST(GrpoUpdate, SecondMiniBatchClips) {
  fixtures::TinyPolicy a = fixtures::make_tiny_policy(7), b = fixtures::make_tiny_policy(7);
  auto samples = on_policy_samples(a.model, 4, 1.0);
  torch::optim::AdamW opt_a(a.model->parameters(), torch::optim::AdamWOptions(0.05));
  torch::optim::AdamW opt_b(b.model->parameters(), torch::optim::AdamWOptions(0.05));
  const std::vector<PolicyLossTerms> ref = reference_two_mini_batches(b.model, opt_b, samples, {});
  EXPECT_EQ(ref[0].pg_clipfrac, 0.0);  // first step: ratio 1
  EXPECT_GT(ref[1].pg_clipfrac, 0.0);
  const UpdateStats s = grpo_update(a.model, opt_a, samples, mini_batch_options(2));
  EXPECT_GT(s.pg_clipfrac, 0.0);
  EXPECT_EQ(s.pg_clipfrac_lower, 0.0);  // no dual clip configured

  fixtures::TinyPolicy c = fixtures::make_tiny_policy(7);
  torch::optim::AdamW opt_c(c.model->parameters(), torch::optim::AdamWOptions(0.05));
  UpdateOptions dual = mini_batch_options(2);
  dual.loss.dual_clip_c = 1.01;
  EXPECT_GT(grpo_update(c.model, opt_c, samples, dual).pg_clipfrac_lower, 0.0);

  fixtures::TinyPolicy d = fixtures::make_tiny_policy(7);
  torch::optim::AdamW opt_d(d.model->parameters(), torch::optim::AdamWOptions(0.05));
  EXPECT_EQ(grpo_update(d.model, opt_d, samples, mini_batch_options(1)).pg_clipfrac, 0.0);
}

// Fewer samples than mini-batches: the empty mini-batches are skipped (one step for one sample), and
// the update equals M = 1 exactly (the old logprobs of the only step are the weights' own, so the
// same float operations run). Through a one-rank Gloo group (the data-parallel path: per-mini-batch
// all-reduced normalisers, Dr.GRPO's L agreed by MAX) the result is the same again (collectives of
// one rank are the identity).
TEST(GrpoUpdate, EmptyMiniBatchesAreSkippedAndDataParallelPathAgrees) {
  fixtures::TinyPolicy a = fixtures::make_tiny_policy(5), b = fixtures::make_tiny_policy(5),
                       c = fixtures::make_tiny_policy(5);
  auto samples = on_policy_samples(a.model, 1, 1.0);
  UpdateOptions three = mini_batch_options(3);
  three.loss.agg_mode = AggMode::DrGrpo;
  UpdateOptions one = mini_batch_options(1);
  one.loss.agg_mode = AggMode::DrGrpo;
  torch::optim::AdamW opt_a(a.model->parameters(), torch::optim::AdamWOptions(1e-2));
  torch::optim::AdamW opt_b(b.model->parameters(), torch::optim::AdamWOptions(1e-2));
  torch::optim::AdamW opt_c(c.model->parameters(), torch::optim::AdamWOptions(1e-2));
  const UpdateStats sa = grpo_update(a.model, opt_a, samples, three);
  const UpdateStats sb = grpo_update(b.model, opt_b, samples, one);
  EXPECT_EQ(sa.num_optimizer_steps, 1);
  EXPECT_NEAR(sa.pg_loss, sb.pg_loss, 1e-7);
  EXPECT_LT(max_abs_diff(params_of(a.model), params_of(b.model)), 1e-7);

  DistributedOptions dopt;
  dopt.backend = "gloo";
  dopt.group_at_world_size_1 = true;
  DistributedContext dist(DistributedEnv{}, dopt);
  const UpdateStats sc = grpo_update(c.model, opt_c, samples, three, &dist);
  EXPECT_EQ(sc.num_optimizer_steps, 1);
  EXPECT_EQ(sc.pg_loss, sa.pg_loss);
  EXPECT_EQ(max_abs_diff(params_of(a.model), params_of(c.model)), 0.0);
  EXPECT_THROW(grpo_update(c.model, opt_c, samples, mini_batch_options(0)), spade::Error);
}
