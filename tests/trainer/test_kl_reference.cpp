// KL penalty to a frozen reference policy in the GRPO update (loss.kl_coef > 0): reference logprobs
// per micro-batch under no_grad, the aggregated KL reported, the config's reference requirement.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "common/error.h"
#include "tests/testing/tiny_policy.h"
#include "trainer/config.h"
#include "trainer/grpo_update.h"

using namespace spade;
using namespace spade::trainer;

namespace {

// Fixed samples with sampler logprobs that are not the model's own (so TIS and the PG term are active).
std::vector<rollout::Sample> fixed_samples() {
  std::vector<rollout::Sample> out;
  for (int i = 0; i < 4; ++i) {
    rollout::Sample s;
    std::vector<int64_t> p, r;
    for (int k = 0; k < 3 + i; ++k) p.push_back(5 + (k * 7 + i) % 50);
    for (int k = 0; k < 4 + 2 * i; ++k) r.push_back(5 + (k * 11 + 3 * i) % 50);
    s.append_context(p);
    s.append_sampled(r, std::vector<float>(r.size(), -6.0f));
    s.advantage = (i % 2 == 0) ? 1.0 : -0.5;
    out.push_back(s);
  }
  return out;
}

std::vector<torch::Tensor> params_of(policy::Transformer& m) {
  std::vector<torch::Tensor> out;
  for (auto& p : m->parameters()) out.push_back(p.detach().clone());
  return out;
}

}  // namespace

// K3 / low_var_kl at logp == ref_logp is exactly 0 with zero gradient (d/dx (e^-x - 1 + x) = 1 - e^-x
// = 0 at x = 0): a reference equal to the policy changes nothing.
TEST(KlReference, ReferenceEqualToPolicyChangesNothing) {
  const auto samples = fixed_samples();
  fixtures::TinyPolicy a = fixtures::make_tiny_policy(7), b = fixtures::make_tiny_policy(7);
  fixtures::TinyPolicy ref = fixtures::make_tiny_policy(7);
  torch::optim::SGD opt_a(a.model->parameters(), torch::optim::SGDOptions(0.1));
  torch::optim::SGD opt_b(b.model->parameters(), torch::optim::SGDOptions(0.1));
  UpdateOptions plain, with_kl;
  with_kl.loss.kl_coef = 0.5;
  with_kl.reference = ref.model;
  grpo_update(a.model, opt_a, samples, plain);
  const UpdateStats s = grpo_update(b.model, opt_b, samples, with_kl);
  EXPECT_EQ(s.kl, 0.0);
  const auto pa = params_of(a.model), pb = params_of(b.model);
  for (size_t i = 0; i < pa.size(); ++i) EXPECT_TRUE(torch::allclose(pa[i], pb[i], 0, 1e-7)) << "parameter " << i;
}

// The reported KL is the aggregated penalty before kl_coef: with k1 (x = logp - ref_logp) and
// token_mean, the mean of x over the masked tokens, computed here directly from the two models'
// teacher-forced logprobs (plain subtraction; no policy_loss code). An SGD step on the KL alone
// (advantages 0) lowers k2 = x^2 / 2 towards the reference.
TEST(KlReference, ReportedKlIsTheMaskedMeanOfTheLogRatio) {
  auto samples = fixed_samples();
  fixtures::TinyPolicy p = fixtures::make_tiny_policy(7), ref = fixtures::make_tiny_policy(8);
  std::vector<const rollout::Sample*> ptrs;
  for (auto& s : samples) ptrs.push_back(&s);
  double expected = 0, tokens = 0;
  {
    torch::NoGradGuard ng;
    for (const PackedBatch& b : pack_micro_batches(ptrs, 1 << 20)) {
      const torch::Tensor x = sequence_logprobs(p.model, b, false).first - sequence_logprobs(ref.model, b, false).first;
      expected += (x * b.loss_mask).sum().item<double>();
      tokens += b.loss_mask.sum().item<double>();
    }
  }
  expected /= tokens;
  UpdateOptions o;
  o.loss.kl_coef = 0.1;
  o.loss.kl_type = KlType::K1;
  o.loss.agg_mode = AggMode::TokenMean;
  o.reference = ref.model;
  torch::optim::SGD opt(p.model->parameters(), torch::optim::SGDOptions(0.0));  // lr 0: measure only
  const UpdateStats s = grpo_update(p.model, opt, samples, o);
  EXPECT_NEAR(s.kl, expected, 1e-5 * std::max(1.0, std::abs(expected)));
  EXPECT_GT(std::abs(expected), 1e-3);  // the two random models do differ

  for (auto& s2 : samples) s2.advantage = 0.0;
  o.loss.kl_type = KlType::K2;
  o.loss.kl_coef = 1.0;
  o.grad_clip = 0;
  torch::optim::SGD step(p.model->parameters(), torch::optim::SGDOptions(0.05));
  const double before = grpo_update(p.model, step, samples, o).kl;
  const double after = grpo_update(p.model, step, samples, o).kl;
  EXPECT_LT(after, before);
}

TEST(KlReference, MissingReferenceIsAnError) {
  fixtures::TinyPolicy p = fixtures::make_tiny_policy(7);
  torch::optim::SGD opt(p.model->parameters(), torch::optim::SGDOptions(0.1));
  UpdateOptions o;
  o.loss.kl_coef = 0.1;
  try {
    grpo_update(p.model, opt, fixed_samples(), o);
    FAIL() << "no error without a reference";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("reference"), std::string::npos) << e.what();
  }
}

TEST(KlReference, ConfigNeedsAReferenceCheckpoint) {
  try {
    parse_config("loss: {kl_coef: 0.005}\n", "kl.yaml");
    FAIL() << "kl_coef > 0 accepted without a reference";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("loss.kl_reference"), std::string::npos) << e.what();
  }
  const Config c = parse_config("loss: {kl_coef: 0.005, kl_type: k3, kl_reference: /ckpt}\n", "kl.yaml");
  EXPECT_EQ(c.loss.kl_reference, "/ckpt");
  EXPECT_NO_THROW(parse_config("model: {init_checkpoint: /base}\nloss: {kl_coef: 0.005}\n", "kl.yaml"));
  EXPECT_THROW(parse_config("loss: {kl_type: kl}\n", "kl.yaml"), Error);
}
