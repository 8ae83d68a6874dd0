// End-to-end gradient check of the GRPO loss through the model: autograd's gradient of
//   L(theta) = compute_policy_loss(sequence_logprobs(model_theta, batch, entropy, entropy_grad, chunk_rows))
// w.r.t. individual parameter entries (embeddings = tied lm_head, q/k/v projections, RMSNorm weights,
// the MLP) against central finite differences of L along e_i (the fourth-order stencil under Precision).
// Why the finite difference is an independent check: it only ever evaluates the loss forward (under
// no_grad), so it knows nothing of autograd, of the chunked lm_head's hand-written backward
// (trainer/chunked_logprobs.h, including its entropy term), nor of which terms compute_policy_loss
// detaches; it is the definition of the derivative. PolicyLoss.GradientMatchesFiniteDifferences
// differentiates only w.r.t. the logp tensor; this covers the model and the chunked path too.
//
// The batch: 3 samples of different lengths (packed with right padding), prompt tokens masked out,
// per-sample advantages of both signs and temperatures 0.8 / 1.25 / 0.8; loss with the PPO clip
// (eps 0.2 / 0.28), TIS on (cap 2) and entropy_coef 0.01, KL off. old_logp = logp(theta).detach() + a
// fixed per-token offset from {-0.6, -0.1, 0.05, 0.15, 0.6}, so log ratios are {0.6, 0.1, -0.05, -0.15,
// -0.6}: the first and last are clipped for one advantage sign (log 1.28 = 0.247, log 0.8 = -0.223), the
// others are not, and every token is >= 0.07 away from a clip kink, more than a step of one weight
// entry (<= 2h = 0.04) moves a logprob, so the loss is smooth along each finite-difference segment.
// rollout_logp offsets give TIS weights exp({0, 0.3, 1.0, -0.5}) = {1, 1.35, 2.72 -> capped at 2, 0.61}.
//
// Precision: the check runs in float32. A float64 run is not possible: model->to(kDouble) converts the
// parameters, but policy/transformer.cpp rounds RMSNorm inputs, the attention softmax, lm_head's logits
// and token_logprobs' input to float32 whatever the model dtype (HF's own casts), so the loss would be
// a float32-quantised function with no float64 derivative to compare against at h ~ 1e-6.
// In float32 a central difference has two errors: rounding, ~u |L| / h (u = 2^-24 per rounding, many
// roundings of O(1) terms), and truncation. The fourth-order stencil (8(L(h) - L(-h)) - (L(2h) -
// L(-2h))) / 12h (truncation O(h^4)) with h = 2e-2 balances them; measured with h in {5e-3, 1e-2, 2e-2,
// 4e-2, 8e-2}: relative errors ~1e-3 at 5e-3 (rounding), ~1e-5..1e-4 at 2e-2..4e-2, rising again at 8e-2
// (truncation). Tolerance per entry: 2e-3 |FD| + 1e-5 (the 1e-5 floor for near-zero gradients, e.g.
// model.norm.weight[11] ~ 5e-5). Measured: the worst |autograd - FD| is 0.37 of that tolerance (both
// paths; the per-entry table is printed). The check is sharp enough for the entropy term: with the
// entropy detached (its gradient missing, entropy_coef 0.01 being ~1% of the gradient) 14 of 22 entries
// fall outside the tolerance, and the test asserts that at least 5 do.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <string>
#include <vector>

#include "tests/testing/random_model.h"
#include "trainer/grpo_update.h"
#include "trainer/policy_loss.h"

using namespace spade;
using namespace spade::trainer;

namespace {

struct Setup {
  policy::Transformer model{nullptr};
  std::vector<rollout::Sample> samples;
  PackedBatch batch;
  torch::Tensor old_logp;
  PolicyLossConfig cfg;
  double normaliser = 0;
};

Setup make_setup() {
  Setup s;
  s.model = fixtures::random_model("qwen3");  // vocab 37, hidden 32, 2 layers, qk-norm, tied embeddings
  // Smaller weights than the fixture's peaked 0.3 so the entropy is not ~0 (its gradient would vanish).
  s.model->init_weights(11, 0.12);
  const int64_t V = s.model->config().vocab_size;
  const std::vector<std::pair<int, int>> lengths{{3, 5}, {2, 9}, {4, 3}};  // (prompt, response) tokens
  const double advantages[] = {1.0, -0.7, 0.4}, temperatures[] = {0.8, 1.25, 0.8};
  for (size_t i = 0; i < lengths.size(); ++i) {
    rollout::Sample x;
    std::vector<int64_t> prompt, response;
    for (int t = 0; t < lengths[i].first; ++t) prompt.push_back((3 + 5 * t + 7 * i) % V);
    for (int t = 0; t < lengths[i].second; ++t) response.push_back((1 + 11 * t + 3 * i) % V);
    x.append_context(prompt);
    x.append_sampled(response, std::vector<float>(response.size(), 0.0f));
    x.advantage = advantages[i];
    x.temperature = temperatures[i];
    s.samples.push_back(x);
  }
  std::vector<const rollout::Sample*> ptrs;
  for (const auto& x : s.samples) ptrs.push_back(&x);
  std::vector<PackedBatch> batches = pack_micro_batches(ptrs, 1 << 20);
  EXPECT_EQ(batches.size(), 1u);
  s.batch = batches[0];
  s.cfg.entropy_coef = 0.01;
  s.cfg.kl_coef = 0.0;
  s.cfg.tis = true;
  s.normaliser = global_normaliser(s.cfg.agg_mode, {s.batch.loss_mask});

  // Offsets per token (a fixed pattern over the flattened [B, T] grid).
  const int64_t n = s.batch.loss_mask.numel();
  const float old_off[] = {-0.6f, -0.1f, 0.05f, 0.15f, 0.6f}, roll_off[] = {0.0f, 0.3f, 1.0f, -0.5f};
  torch::Tensor o = torch::empty({n}), r = torch::empty({n});
  for (int64_t k = 0; k < n; ++k) {
    o[k] = old_off[k % 5];
    r[k] = roll_off[(k / 2) % 4];
  }
  torch::NoGradGuard ng;
  torch::Tensor logp = sequence_logprobs(s.model, s.batch, false).first;
  s.old_logp = logp + o.view_as(logp);
  s.batch.rollout_logp = s.old_logp - r.view_as(logp);
  return s;
}

PolicyLossTerms loss_of(Setup& s, int64_t chunk_rows, bool entropy_grad = true) {
  auto [logp, entropy] = sequence_logprobs(s.model, s.batch, /*with_entropy=*/true, entropy_grad, chunk_rows);
  return compute_policy_loss(logp, s.old_logp, s.batch.rollout_logp, s.batch.advantages, s.batch.loss_mask,
                             s.normaliser, s.cfg, entropy);
}

struct Entry {
  std::string param;
  int64_t index;  // into the flattened parameter
};

// ~20 entries: embedding rows of input tokens and of tokens only ever predicted (tied lm_head), q/k/v
// projections, the RMSNorm weights (input, qk-norm, final), the MLP.
std::vector<Entry> entries(Setup& s) {
  const int64_t H = s.model->config().hidden_size;
  const int64_t tok_in = s.batch.input_ids[0][1].item<int64_t>(), tok_out = s.batch.targets[1][4].item<int64_t>();
  return {
      {"model.embed_tokens.weight", tok_in * H + 0},
      {"model.embed_tokens.weight", tok_in * H + 17},
      {"model.embed_tokens.weight", tok_out * H + 3},
      {"model.embed_tokens.weight", tok_out * H + 30},
      {"model.embed_tokens.weight", 36 * H + 9},
      {"model.layers.0.self_attn.q_proj.weight", 5},
      {"model.layers.0.self_attn.q_proj.weight", 200},
      {"model.layers.1.self_attn.q_proj.weight", 77},
      {"model.layers.0.self_attn.k_proj.weight", 12},
      {"model.layers.1.self_attn.k_proj.weight", 101},
      {"model.layers.0.self_attn.v_proj.weight", 40},
      {"model.layers.1.self_attn.v_proj.weight", 333},
      {"model.layers.0.self_attn.o_proj.weight", 64},
      {"model.layers.0.input_layernorm.weight", 4},
      {"model.layers.1.post_attention_layernorm.weight", 21},
      {"model.layers.0.self_attn.q_norm.weight", 2},
      {"model.layers.1.self_attn.k_norm.weight", 6},
      {"model.norm.weight", 11},
      {"model.norm.weight", 25},
      {"model.layers.0.mlp.gate_proj.weight", 150},
      {"model.layers.1.mlp.up_proj.weight", 500},
      {"model.layers.0.mlp.down_proj.weight", 700},
  };
}

double loss_value(Setup& s, int64_t chunk_rows) {
  torch::NoGradGuard ng;
  return loss_of(s, chunk_rows).loss.item<double>();
}

void check_gradients(int64_t chunk_rows) {
  Setup s = make_setup();
  PolicyLossTerms terms = loss_of(s, chunk_rows);
  // The setup does what the header says: some tokens clipped, some TIS weights capped.
  EXPECT_GT(terms.pg_clipfrac, 0.0);
  EXPECT_LT(terms.pg_clipfrac, 1.0);
  EXPECT_GT(terms.tis_clipfrac, 0.0);
  auto params = s.model->named_parameters();
  // Sensitivity: the same loss with the entropy detached (its gradient missing, as a bug in the
  // entropy backward would make it), to show that the comparison below would catch that.
  loss_of(s, chunk_rows, /*entropy_grad=*/false).loss.backward();
  std::vector<double> no_entropy_grad;
  for (const Entry& e : entries(s))
    no_entropy_grad.push_back(params.find(e.param)->grad().reshape({-1})[e.index].item<double>());
  s.model->zero_grad();
  terms.loss.backward();
  const double h = 2e-2;
  int checked = 0, caught = 0;
  double worst = 0;  // max |autograd - fd| / tol
  for (const Entry& e : entries(s)) {
    torch::Tensor* p = params.find(e.param);
    ASSERT_NE(p, nullptr) << e.param;
    ASSERT_LT(e.index, p->numel()) << e.param;
    const double autograd = p->grad().reshape({-1})[e.index].item<double>();
    torch::Tensor flat = p->view({-1});
    auto at = [&](double delta) {
      {
        torch::NoGradGuard ng;
        flat[e.index].add_(delta);
      }
      const double v = loss_value(s, chunk_rows);
      torch::NoGradGuard ng;
      flat[e.index].sub_(delta);
      return v;
    };
    const double fd = (8 * (at(h) - at(-h)) - (at(2 * h) - at(-2 * h))) / (12 * h);
    const double tol = 2e-3 * std::abs(fd) + 1e-5;
    EXPECT_NEAR(autograd, fd, tol) << e.param << "[" << e.index << "] chunk_rows " << chunk_rows;
    if (std::abs(no_entropy_grad[checked] - fd) > tol) ++caught;
    worst = std::max(worst, std::abs(autograd - fd) / tol);
    std::printf("%-46s %4lld  autograd % .6e  fd % .6e  |diff|/tol %.2f  without entropy grad: %.2f\n",
                e.param.c_str(), static_cast<long long>(e.index), autograd, fd, std::abs(autograd - fd) / tol,
                std::abs(no_entropy_grad[checked] - fd) / tol);
    ++checked;
  }
  EXPECT_EQ(checked, 22);
  EXPECT_GE(caught, 5);
  std::printf("chunk_rows %lld: worst |diff|/tol %.2f; %d of %d entries would fail without the entropy gradient\n",
              static_cast<long long>(chunk_rows), worst, caught, checked);
}

}  // namespace

TEST(ModelGradients, WholeLogitsMatchFiniteDifferences) { check_gradients(0); }

TEST(ModelGradients, ChunkedMatchFiniteDifferences) { check_gradients(3); }
