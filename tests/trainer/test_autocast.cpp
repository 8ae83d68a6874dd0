// bf16 autocast (config train.autocast, trainer/autocast.h; issue 5) on this machine's CPU: LibTorch's
// CPU autocast really runs the matmuls in bfloat16, the scope restores the previous state, master
// weights and gradients stay float32, the results stay within bf16 rounding of the fp32 ones, and
// activation checkpointing recomputes under the same autocast state as the forward.
// Expected values: the fp32 computation of the same model (no autocast), and bf16's unit roundoff
// 2^-8 = 0.0039 (8 significand bits), which bounds the relative error of each rounded matmul input.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "common/error.h"
#include "policy/torch_compat.h"
#include "tests/testing/tiny_policy.h"
#include "trainer/autocast.h"
#include "trainer/grpo_update.h"

using namespace spade;
using namespace spade::trainer;

namespace {

std::vector<rollout::Sample> samples(int64_t vocab) {
  std::vector<rollout::Sample> out;
  for (int i = 0; i < 4; ++i) {
    rollout::Sample s;
    std::vector<int64_t> p, r;
    for (int64_t k = 0; k < 5 + i; ++k) p.push_back(5 + (k * 7 + i) % (vocab - 5));
    for (int64_t k = 0; k < 6 + 2 * i; ++k) r.push_back(5 + (k * 11 + 3 * i) % (vocab - 5));
    s.append_context(p);
    s.append_sampled(r, std::vector<float>(r.size(), -3.0f));
    s.temperature = 1.0;
    s.advantage = i % 2 == 0 ? 1.0 : -1.0;
    out.push_back(s);
  }
  return out;
}

// Logprobs [B, T] of the packed samples, optionally under bf16 autocast.
torch::Tensor logprobs(policy::Transformer& m, const std::vector<rollout::Sample>& s, bool bf16) {
  std::vector<const rollout::Sample*> ptrs;
  for (const auto& x : s) ptrs.push_back(&x);
  PackedBatch b = pack_micro_batches(ptrs, 1 << 20)[0];
  torch::NoGradGuard ng;
  AutocastScope scope(torch::kCPU, bf16);
  return sequence_logprobs(m, b, false, false, /*chunk_rows=*/16).first * b.loss_mask;
}

}  // namespace

TEST(Autocast, ParseAndScope) {
  EXPECT_FALSE(parse_autocast("none"));
  EXPECT_TRUE(parse_autocast("bf16"));
  EXPECT_THROW(parse_autocast("fp16"), Error);
  torch::Tensor a = torch::randn({4, 8}), w = torch::randn({3, 8});
  ASSERT_FALSE(compat::autocast_enabled(c10::DeviceType::CPU));
  {
    AutocastScope off(torch::kCPU, false);
    EXPECT_EQ(torch::linear(a, w).scalar_type(), torch::kFloat32);
  }
  {
    AutocastScope on(torch::kCPU, true);
    EXPECT_TRUE(compat::autocast_enabled(c10::DeviceType::CPU));
    EXPECT_EQ(compat::autocast_dtype(c10::DeviceType::CPU), torch::kBFloat16);
    EXPECT_EQ(torch::linear(a, w).scalar_type(), torch::kBFloat16);   // matmuls in bf16
    EXPECT_EQ(torch::matmul(a, w.t()).scalar_type(), torch::kBFloat16);
    EXPECT_EQ(torch::softmax(a, -1).scalar_type(), torch::kFloat32);  // elementwise/reductions keep fp32
    {
      AutocastScope nested(torch::kCPU, true);
      EXPECT_EQ(torch::linear(a, w).scalar_type(), torch::kBFloat16);
    }
    EXPECT_TRUE(compat::autocast_enabled(c10::DeviceType::CPU));  // inner exit keeps the outer scope on
    // bf16 product vs fp32: inputs rounded to 8 significand bits -> |error| <= ~2 * 2^-8 * sum |a||w|.
    const torch::Tensor bound = 2 * std::ldexp(1.0, -8) * torch::matmul(a.abs(), w.abs().t()) + 1e-2;
    EXPECT_TRUE((torch::linear(a, w).to(torch::kFloat32) - torch::matmul(a, w.t())).abs().le(bound).all().item<bool>());
  }
  EXPECT_FALSE(compat::autocast_enabled(c10::DeviceType::CPU));
  EXPECT_EQ(torch::linear(a, w).scalar_type(), torch::kFloat32);
}

TEST(Autocast, ForwardStaysWithinBf16RoundingOfFp32) {
  fixtures::TinyPolicy p = fixtures::make_tiny_policy(7, 32, 2);
  const auto s = samples(p.model->config().vocab_size);
  torch::Tensor fp32 = logprobs(p.model, s, false), bf16 = logprobs(p.model, s, true);
  EXPECT_EQ(bf16.scalar_type(), torch::kFloat32);  // logprobs are always float32
  const double diff = (fp32 - bf16).abs().max().item<double>();
  EXPECT_GT(diff, 0.0) << "no bf16 rounding at all: autocast did not reach the model's matmuls";
  // ~10 chained bf16 roundings of relative size 2^-8 on logits of magnitude ~1: well under 0.1 nats.
  EXPECT_LT(diff, 0.1);
}

TEST(Autocast, GrpoUpdateKeepsFp32MasterWeightsAndMatchesFp32Direction) {
  fixtures::TinyPolicy a = fixtures::make_tiny_policy(7, 32, 2), b = fixtures::make_tiny_policy(7, 32, 2);
  const auto s = samples(a.model->config().vocab_size);
  torch::optim::SGD opt_a(a.model->parameters(), torch::optim::SGDOptions(1.0));
  torch::optim::SGD opt_b(b.model->parameters(), torch::optim::SGDOptions(1.0));
  UpdateOptions o;
  o.grad_clip = 0;  // compare raw steps (SGD lr 1: the step is the gradient)
  grpo_update(a.model, opt_a, s, o);
  o.autocast = "bf16";
  grpo_update(b.model, opt_b, s, o);
  double dot = 0, na = 0, nb = 0;
  auto pb = b.model->parameters();
  auto pa = a.model->parameters();
  for (const torch::Tensor& t : pb) EXPECT_EQ(t.scalar_type(), torch::kFloat32);  // master weights fp32
  // The two updates (new - old weights) point the same way: cosine > 0.99 (bf16 perturbs ~1e-2 relative).
  fixtures::TinyPolicy fresh = fixtures::make_tiny_policy(7, 32, 2);
  auto p0 = fresh.model->parameters();
  for (size_t i = 0; i < pa.size(); ++i) {
    const torch::Tensor ua = (pa[i] - p0[i]).flatten().to(torch::kDouble), ub = (pb[i] - p0[i]).flatten().to(torch::kDouble);
    dot += (ua * ub).sum().item<double>();
    na += (ua * ua).sum().item<double>();
    nb += (ub * ub).sum().item<double>();
  }
  ASSERT_GT(na, 0.0);
  const double cosine = dot / std::sqrt(na * nb);
  EXPECT_GT(cosine, 0.99);
  EXPECT_LT(cosine, 1.0 - 1e-12) << "identical updates: the bf16 path did not run";
  EXPECT_FALSE(compat::autocast_enabled(c10::DeviceType::CPU));
}

TEST(Autocast, CheckpointingRecomputesUnderTheForwardsAutocastState) {
  // Same model, bf16 autocast, with and without activation checkpointing: the recomputation in backward
  // must re-enter bf16 (the backward itself runs outside the scope), so the gradients are equal. Had it
  // recomputed in fp32, they would differ by bf16 rounding (~1e-3 relative), far above 1e-6.
  fixtures::TinyPolicy a = fixtures::make_tiny_policy(7, 32, 2), b = fixtures::make_tiny_policy(7, 32, 2);
  b.model->set_activation_checkpointing(true);
  const auto s = samples(a.model->config().vocab_size);
  std::vector<const rollout::Sample*> ptrs;
  for (const auto& x : s) ptrs.push_back(&x);
  PackedBatch batch = pack_micro_batches(ptrs, 1 << 20)[0];
  for (policy::Transformer* m : {&a.model, &b.model}) {
    torch::Tensor loss;
    {
      AutocastScope scope(torch::kCPU, true);
      loss = -(sequence_logprobs(*m, batch, false, false, 16).first * batch.loss_mask).sum();
    }
    loss.backward();
  }
  auto gb = b.model->named_parameters();
  for (const auto& item : a.model->named_parameters()) {
    ASSERT_TRUE(gb[item.key()].grad().defined()) << item.key();
    EXPECT_EQ(gb[item.key()].grad().scalar_type(), torch::kFloat32);
    EXPECT_LE((item.value().grad() - gb[item.key()].grad()).abs().max().item<double>(), 1e-6) << item.key();
  }
}

TEST(Autocast, ChunkedLogprobGradientsMatchTheWholeLogitsPathUnderBf16) {
  // trainer/chunked_logprobs.cpp under autocast vs the whole-logits path (lm_head matmul + log_softmax,
  // differentiated by autograd in bf16): both round the same matmuls to bf16, so gradients agree to
  // bf16 precision (relative 2^-8 per rounding; 3e-2 of the largest gradient allows a few in a row).
  fixtures::TinyPolicy a = fixtures::make_tiny_policy(7, 32, 2), b = fixtures::make_tiny_policy(7, 32, 2);
  const auto s = samples(a.model->config().vocab_size);
  std::vector<const rollout::Sample*> ptrs;
  for (const auto& x : s) ptrs.push_back(&x);
  PackedBatch batch = pack_micro_batches(ptrs, 1 << 20)[0];
  for (auto [m, chunk] : {std::make_pair(&a.model, int64_t{0}), std::make_pair(&b.model, int64_t{5})}) {
    torch::Tensor loss;
    {
      AutocastScope scope(torch::kCPU, true);
      loss = -(sequence_logprobs(*m, batch, false, false, chunk).first * batch.loss_mask).sum();
    }
    loss.backward();
  }
  auto gb = b.model->named_parameters();
  for (const auto& item : a.model->named_parameters()) {
    const torch::Tensor ga = item.value().grad(), g = gb[item.key()].grad();
    ASSERT_TRUE(g.defined()) << item.key();
    const double scale = ga.abs().max().item<double>();
    EXPECT_LE((ga - g).abs().max().item<double>(), 3e-2 * scale + 1e-7) << item.key();
  }
}
