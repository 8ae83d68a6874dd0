// The chunked output projection's differentiable entropy (trainer/chunked_logprobs.h): values and
// gradients w.r.t. hidden and weight of L = sum_i a_i logp_i + sum_i b_i H_i (arbitrary per-row weights
// a, b; per-row temperatures) against LibTorch's own autograd on the whole [N, V] logits, which is the
// independent reference: policy::token_logprobs / policy::token_entropy (log_softmax, gathered, and
// -sum p log p) in float32, and the same two formulas written here in float64 (policy::token_* compute
// in float32). Chunk sizes 1, 4 (ragged last chunk), N and > N. Tolerances: 1e-5 (float32: a few float32
// roundings of O(1) quantities, 2^-24 each) and 1e-10 (float64, 2^-53 each), times max(1, the largest
// |reference value|) of each tensor. bf16 autocast on CPU as in test_autocast.cpp: both sides round the
// same matmuls to bf16, so they agree to bf16 precision (2^-8 per rounding).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "policy/transformer.h"
#include "tests/testing/autograd_graph.h"
#include "tests/testing/tiny_policy.h"
#include "trainer/autocast.h"
#include "trainer/chunked_logprobs.h"
#include "trainer/grpo_update.h"

using namespace spade;
using namespace spade::trainer;

namespace {

constexpr int64_t kN = 13, kH = 8, kV = 61;

struct Problem {
  torch::Tensor h, w, targets, tau, a, b;  // [N,H], [V,H], [N] int64, [N], [N], [N]
};

Problem make_problem(torch::Dtype dtype, uint64_t seed = 3) {
  torch::manual_seed(seed);
  Problem p;
  p.h = torch::randn({kN, kH}, torch::kFloat64).to(dtype);
  p.w = (torch::randn({kV, kH}, torch::kFloat64) * 0.7).to(dtype);
  p.targets = torch::randint(0, kV, {kN}, torch::kLong);
  p.tau = torch::linspace(0.5, 1.5, kN, torch::kFloat64).to(dtype);  // per-row temperatures
  p.a = torch::randn({kN}, torch::kFloat64).to(dtype);
  p.b = torch::randn({kN}, torch::kFloat64).to(dtype);
  return p;
}

struct Result {
  torch::Tensor logp, entropy, grad_h, grad_w;
};

// Whole-logits reference through autograd: L = sum a*logp + sum b*H. float32 uses policy::token_logprobs
// and policy::token_entropy on logits already divided by each row's temperature (as sequence_logprobs
// does for mixed temperatures); float64 the same formulas in float64.
Result reference(const Problem& p, double wa = 1, double wb = 1) {
  torch::Tensor h = p.h.clone().requires_grad_(true), w = p.w.clone().requires_grad_(true);
  torch::Tensor z = torch::matmul(h, w.t());
  torch::Tensor logp, ent;
  if (p.h.scalar_type() == torch::kFloat64) {
    torch::Tensor ls = torch::log_softmax(z / p.tau.unsqueeze(1), -1);
    logp = ls.gather(-1, p.targets.unsqueeze(1)).squeeze(1);
    ent = -(ls.exp() * ls).sum(-1);
  } else {
    torch::Tensor zs = z.to(torch::kFloat32) / p.tau.to(torch::kFloat32).unsqueeze(1);
    logp = policy::token_logprobs(zs, p.targets, 1.0);
    ent = policy::token_entropy(zs, 1.0);
  }
  (wa * (p.a * logp).sum() + wb * (p.b * ent).sum()).backward();
  return {logp.detach(), ent.detach(), h.grad(), w.grad()};
}

// The same loss through chunked_token_logprobs with a differentiable entropy. wa == 0: logp is left
// out of the loss entirely (its gradient arrives undefined in the custom backward).
Result chunked(const Problem& p, int64_t chunk, double wa = 1, double wb = 1) {
  torch::Tensor h = p.h.clone().requires_grad_(true), w = p.w.clone().requires_grad_(true), ent;
  torch::Tensor logp = chunked_token_logprobs(h, w, p.targets, p.tau, chunk, &ent, /*entropy_grad=*/true);
  EXPECT_TRUE(ent.requires_grad());
  torch::Tensor loss = wb * (p.b * ent).sum();
  if (wa != 0) loss = loss + wa * (p.a * logp).sum();
  loss.backward();
  return {logp.detach(), ent.detach(), h.grad(), w.grad()};
}

// max |x - ref| <= tol * max(1, max |ref|)
void expect_close(const torch::Tensor& x, const torch::Tensor& ref, double tol, const std::string& what) {
  ASSERT_TRUE(x.defined()) << what;
  EXPECT_EQ(x.scalar_type(), ref.scalar_type()) << what;
  const double scale = std::max(1.0, ref.abs().max().item<double>());
  EXPECT_LE((x - ref).abs().max().item<double>(), tol * scale) << what;
}

void check_against_reference(torch::Dtype dtype, double tol) {
  const Problem p = make_problem(dtype);
  for (auto [wa, wb] : {std::pair{1.0, 1.0}, std::pair{0.0, 1.0}, std::pair{1.0, 0.0}}) {
    const Result r = reference(p, wa, wb);
    for (int64_t chunk : {int64_t{1}, int64_t{4}, kN, kN + 7}) {
      const std::string where = "chunk " + std::to_string(chunk) + " a*" + std::to_string(wa) + " b*" +
                                std::to_string(wb);
      const Result c = chunked(p, chunk, wa, wb);
      expect_close(c.logp, r.logp, tol, "logp, " + where);
      expect_close(c.entropy, r.entropy, tol, "entropy, " + where);
      expect_close(c.grad_h, r.grad_h, tol, "d/dhidden, " + where);
      expect_close(c.grad_w, r.grad_w, tol, "d/dweight, " + where);
    }
  }
  // The entropy term really moves the gradient (so the comparisons above would catch its absence):
  // its share of the reference weight gradient is far above the tolerance.
  const Result both = reference(p, 1, 1), logp_only = reference(p, 1, 0);
  EXPECT_GT((both.grad_w - logp_only.grad_w).abs().max().item<double>(),
            1e3 * tol * std::max(1.0, both.grad_w.abs().max().item<double>()));
}

}  // namespace

TEST(ChunkedEntropy, ValuesAndGradientsMatchWholeLogitsFloat32) { check_against_reference(torch::kFloat32, 1e-5); }

TEST(ChunkedEntropy, ValuesAndGradientsMatchWholeLogitsFloat64) { check_against_reference(torch::kFloat64, 1e-10); }

TEST(ChunkedEntropy, MetricEntropyIsDetachedAndAddsNoGradient) {
  // entropy_grad = false: the entropy is a metric (no graph); the gradient of sum a*logp is unchanged.
  const Problem p = make_problem(torch::kFloat32);
  torch::Tensor h = p.h.clone().requires_grad_(true), w = p.w.clone().requires_grad_(true), ent;
  torch::Tensor logp = chunked_token_logprobs(h, w, p.targets, p.tau, 4, &ent);
  EXPECT_FALSE(ent.requires_grad());
  (p.a * logp).sum().backward();
  const Result r = reference(p, 1, 0);
  expect_close(ent, r.entropy, 1e-5, "entropy");
  expect_close(h.grad(), r.grad_h, 1e-5, "d/dhidden");
  expect_close(w.grad(), r.grad_w, 1e-5, "d/dweight");
}

TEST(ChunkedEntropy, Bf16AutocastMatchesWholeLogitsAutograd) {
  // Under CPU bf16 autocast both sides run h W^T in bf16 (forward, and the chunked backward's
  // recomputation and gradient matmuls; autograd's matmul backward likewise), softmax in float32.
  // They agree to bf16 precision: 2^-8 relative per rounding; 2e-2 of the largest value allows a few
  // in a row (the bound test_autocast.cpp uses for the logprob-only case is 3e-2).
  const Problem p = make_problem(torch::kFloat32);
  Result r, c;
  {
    torch::Tensor h = p.h.clone().requires_grad_(true), w = p.w.clone().requires_grad_(true);
    torch::Tensor loss;
    {
      AutocastScope scope(torch::kCPU, true);
      torch::Tensor z = torch::matmul(h, w.t());
      EXPECT_EQ(z.scalar_type(), torch::kBFloat16);  // autocast really is on
      torch::Tensor zs = z.to(torch::kFloat32) / p.tau.unsqueeze(1);
      torch::Tensor logp = policy::token_logprobs(zs, p.targets, 1.0), ent = policy::token_entropy(zs, 1.0);
      loss = (p.a * logp).sum() + (p.b * ent).sum();
      r = {logp.detach(), ent.detach(), {}, {}};
    }
    loss.backward();
    r.grad_h = h.grad();
    r.grad_w = w.grad();
  }
  {
    torch::Tensor h = p.h.clone().requires_grad_(true), w = p.w.clone().requires_grad_(true), ent, loss;
    {
      AutocastScope scope(torch::kCPU, true);
      torch::Tensor logp = chunked_token_logprobs(h, w, p.targets, p.tau, 4, &ent, true);
      loss = (p.a * logp).sum() + (p.b * ent).sum();
      c = {logp.detach(), ent.detach(), {}, {}};
    }
    loss.backward();
    c.grad_h = h.grad();
    c.grad_w = w.grad();
  }
  expect_close(c.logp, r.logp, 1e-5, "logp (same bf16 logits, float32 softmax)");
  expect_close(c.entropy, r.entropy, 1e-5, "entropy (same bf16 logits, float32 softmax)");
  expect_close(c.grad_h, r.grad_h, 2e-2, "d/dhidden");
  expect_close(c.grad_w, r.grad_w, 2e-2, "d/dweight");
  // Without autocast the gradients differ from these by more than the float32 tolerance: bf16 was used.
  const Result f32 = reference(p);
  EXPECT_GT((f32.grad_w - c.grad_w).abs().max().item<double>(), 1e-4);
}

TEST(ChunkedEntropy, SequenceLogprobsUsesTheChunkedPathWithEntropyGradient) {
  // sequence_logprobs with entropy_grad and chunk_rows > 0 goes through the chunked function (its
  // autograd node; no whole-logits log_softmax node), and its values and parameter gradients equal the
  // whole-logits path's (chunk_rows 0) for loss sum(logp * mask) + 0.3 sum(entropy * mask).
  std::vector<torch::Tensor> grads[2];
  torch::Tensor values[2][2];
  int k = 0;
  for (int64_t chunk : {int64_t{0}, int64_t{3}}) {
    fixtures::TinyPolicy p = fixtures::make_tiny_policy(7);
    std::vector<rollout::Sample> samples(2);
    for (int i = 0; i < 2; ++i) {
      std::vector<int64_t> prompt, response;
      for (int64_t t = 0; t < 3 + i; ++t) prompt.push_back(5 + (7 * t + i) % 50);
      for (int64_t t = 0; t < 4 + 3 * i; ++t) response.push_back(5 + (11 * t + 3 * i) % 50);
      samples[i].append_context(prompt);
      samples[i].append_sampled(response, std::vector<float>(response.size(), -1.0f));
      samples[i].temperature = i == 0 ? 0.7 : 1.3;
    }
    std::vector<const rollout::Sample*> ptrs{&samples[0], &samples[1]};
    PackedBatch b = pack_micro_batches(ptrs, 1 << 20)[0];
    auto [logp, ent] = sequence_logprobs(p.model, b, true, /*entropy_grad=*/true, chunk);
    ASSERT_TRUE(ent.requires_grad());
    EXPECT_EQ(fixtures::graph_has(ent, "ChunkedLogprob"), chunk > 0);
    EXPECT_EQ(fixtures::graph_has(ent, "LogSoftmax"), chunk == 0);
    ((logp * b.loss_mask).sum() + 0.3 * (ent * b.loss_mask).sum()).backward();
    values[k][0] = logp.detach();
    values[k][1] = ent.detach();
    for (auto& prm : p.model->parameters()) grads[k].push_back(prm.grad().clone());
    ++k;
  }
  expect_close(values[1][0], values[0][0], 1e-5, "logp");
  expect_close(values[1][1], values[0][1], 1e-5, "entropy");
  ASSERT_EQ(grads[0].size(), grads[1].size());
  for (size_t i = 0; i < grads[0].size(); ++i)
    expect_close(grads[1][i], grads[0][i], 1e-5, "parameter " + std::to_string(i));
}
