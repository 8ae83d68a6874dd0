// Tests for trainer/policy_loss: every cross-check number of docs/sources.md, trainer-anchors §4
// (computed there independently of any framework; re-derived by hand in the comments), plus
// micro-batch invariance and a finite-difference gradient check.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include <torch/torch.h>

#include "common/error.h"
#include "trainer/policy_loss.h"

using namespace spade::trainer;

namespace {

torch::Tensor t2(std::vector<std::vector<double>> rows, torch::Dtype dtype = torch::kFloat32) {
  const int64_t B = static_cast<int64_t>(rows.size()), T = static_cast<int64_t>(rows[0].size());
  auto out = torch::zeros({B, T}, torch::kFloat64);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < T; ++t) out[b][t] = rows[b][t];
  return out.to(dtype);
}

// One token with ratio r (logp = log r, old = rollout = 0), advantage a; token-mean over 1 token.
PolicyLossTerms one_token(double r, double a, const PolicyLossConfig& cfg) {
  auto logp = torch::full({1, 1}, std::log(r)).requires_grad_(true);
  auto zero = torch::zeros({1, 1});
  PolicyLossConfig c = cfg;
  c.agg_mode = AggMode::TokenMean;
  return compute_policy_loss(logp, zero, zero, torch::full({1, 1}, a), torch::ones({1, 1}), 1.0, c);
}

}  // namespace

// ---------------------------------------------------------------- clip table (trainer-anchors §4)

TEST(PolicyLoss, ClipTableAnchors) {
  // trainer-anchors §4, A = +-0.866. Columns: eps 0.2/0.2, eps 0.2/0.28, dual clip c = 3 (eps 0.2/0.28).
  // By hand, e.g. r = 1.25, A+: max(-1.25*0.866, -1.2*0.866) = -1.0392 (eps_high 0.2) and -1.0825 (0.28);
  // r = 4, A-: max(4*0.866, 1.28*0.866) = 3.464, dual min(3.464, 3*0.866) = 2.598.
  struct Row { double r, a, sym, high, dual; };
  const Row rows[] = {
      {1.25, +0.866, -1.0392, -1.0825, -1.0825}, {1.25, -0.866, 1.0825, 1.0825, 1.0825},
      {0.7, +0.866, -0.6062, -0.6062, -0.6062},  {0.7, -0.866, 0.6928, 0.6928, 0.6928},
      {4.0, -0.866, 3.464, 3.464, 2.598},
  };
  PolicyLossConfig sym;
  sym.eps_low = 0.2;
  sym.eps_high = 0.2;
  PolicyLossConfig high;  // defaults 0.2 / 0.28
  PolicyLossConfig dual;
  dual.dual_clip_c = 3.0;
  for (const Row& row : rows) {
    EXPECT_NEAR(one_token(row.r, row.a, sym).loss.item<double>(), row.sym, 1e-4) << "r " << row.r << " A " << row.a;
    EXPECT_NEAR(one_token(row.r, row.a, high).loss.item<double>(), row.high, 1e-4) << "r " << row.r << " A " << row.a;
    EXPECT_NEAR(one_token(row.r, row.a, dual).loss.item<double>(), row.dual, 1e-4) << "r " << row.r << " A " << row.a;
  }
  // Clip fractions: r = 1.25, A+ with eps_high 0.2 is clipped; with 0.28 it is not.
  EXPECT_DOUBLE_EQ(one_token(1.25, 0.866, sym).pg_clipfrac, 1.0);
  EXPECT_DOUBLE_EQ(one_token(1.25, 0.866, high).pg_clipfrac, 0.0);
  // r = 0.7, A-: clipped at 1 - eps_low.
  EXPECT_DOUBLE_EQ(one_token(0.7, -0.866, high).pg_clipfrac, 1.0);
  // r = 4, A-: the dual clip is active.
  EXPECT_DOUBLE_EQ(one_token(4.0, -0.866, dual).pg_clipfrac_lower, 1.0);
  EXPECT_DOUBLE_EQ(one_token(4.0, -0.866, high).pg_clipfrac_lower, 0.0);
  // ppo_kl = mean(old - logp) = -log 1.25.
  EXPECT_NEAR(one_token(1.25, 0.866, high).ppo_kl, -std::log(1.25), 1e-6);
  PolicyLossConfig bad;
  bad.dual_clip_c = 1.0;
  EXPECT_THROW(one_token(1.0, 1.0, bad), spade::Error);
}

TEST(PolicyLoss, LogRatioClamp) {
  // logp - old = 50 is clamped to 20 before exp: with A = -1e-9 (negative) and no clip cap below,
  // the loss is exp(20) * 1e-9 (finite), not exp(50) * 1e-9.
  PolicyLossConfig c;
  c.tis = false;
  const auto t = one_token(std::exp(50.0), -1e-9, c);
  EXPECT_NEAR(t.loss.item<double>() / (std::exp(20.0) * 1e-9), 1.0, 1e-4);
}

// ---------------------------------------------------------------- aggregation (trainer-anchors §4)

TEST(PolicyLoss, AggregationAnchors) {
  // Per-token losses [[1,3],[2,2,2,6]] (row 0 padded): token-mean 16/6 = 2.6667; seq-mean-token-mean
  // (2 + 3)/2 = 2.5; seq-mean-token-sum (4 + 12)/2 = 8.0; Dr.GRPO L = 8: 16/(2*8) = 1.0.
  const auto values = t2({{1, 3, 0, 0}, {2, 2, 2, 6}});
  const auto mask = t2({{1, 1, 0, 0}, {1, 1, 1, 1}});
  struct Case { AggMode mode; double want; };
  const Case cases[] = {{AggMode::TokenMean, 16.0 / 6.0},
                        {AggMode::SeqMeanTokenMean, 2.5},
                        {AggMode::SeqMeanTokenSum, 8.0},
                        {AggMode::DrGrpo, 1.0}};
  for (const Case& c : cases) {
    const double norm = global_normaliser(c.mode, {mask}, /*max_len=*/8);
    EXPECT_NEAR(aggregate_loss(values, mask, c.mode, norm).item<double>(), c.want, 1e-5) << to_string(c.mode);
    // The same through compute_policy_loss: r = 1, TIS off, A = -value gives token loss = value.
    PolicyLossConfig cfg;
    cfg.tis = false;
    cfg.agg_mode = c.mode;
    auto logp = torch::zeros({2, 4}).requires_grad_(true);
    const auto t = compute_policy_loss(logp, torch::zeros({2, 4}), torch::zeros({2, 4}), -values, mask, norm, cfg);
    EXPECT_NEAR(t.loss.item<double>(), c.want, 1e-5) << to_string(c.mode);
    EXPECT_NEAR(t.pg_loss, c.want, 1e-5);
    EXPECT_EQ(t.num_tokens, 6);
  }
  EXPECT_DOUBLE_EQ(global_normaliser(AggMode::TokenMean, {mask}), 6.0);
  EXPECT_DOUBLE_EQ(global_normaliser(AggMode::SeqMeanTokenMean, {mask, mask}), 4.0);
  EXPECT_DOUBLE_EQ(global_normaliser(AggMode::DrGrpo, {mask}), 8.0);  // max_len 0 -> T = 4
}

TEST(PolicyLoss, NamesRoundTrip) {
  for (auto m : {AggMode::TokenMean, AggMode::SeqMeanTokenMean, AggMode::SeqMeanTokenSum, AggMode::DrGrpo})
    EXPECT_EQ(parse_agg_mode(to_string(m)), m);
  for (auto k : {KlType::K1, KlType::K2, KlType::K3, KlType::LowVarKl}) EXPECT_EQ(parse_kl_type(to_string(k)), k);
  try {
    parse_agg_mode("grpo");
    FAIL();
  } catch (const spade::Error& e) {
    EXPECT_NE(std::string(e.what()).find("seq_mean_token_mean"), std::string::npos) << e.what();
  }
  EXPECT_THROW(parse_kl_type("kl"), spade::Error);
}

// ---------------------------------------------------------------- KL (trainer-anchors §4)

TEST(PolicyLoss, KlAnchors) {
  // logp -1.0, ref -1.2, x = 0.2: k1 0.2; k2 0.02; k3 = exp(-0.2) - 1 + 0.2 = 0.0187308;
  // d k3 / d logp = 1 - exp(-0.2) = 0.181269.
  auto ref = torch::full({1, 1}, -1.2, torch::kFloat64);
  for (KlType k : {KlType::K1, KlType::K2, KlType::K3, KlType::LowVarKl}) {
    auto logp = torch::full({1, 1}, -1.0, torch::kFloat64).requires_grad_(true);
    auto kl = kl_penalty(logp, ref, k);
    const double want = k == KlType::K1 ? 0.2 : k == KlType::K2 ? 0.02 : 0.0187308;
    EXPECT_NEAR(kl.item<double>(), want, 1e-7) << to_string(k);
    kl.sum().backward();
    const double dwant = k == KlType::K1 ? 1.0 : k == KlType::K2 ? 0.2 : 0.181269;
    EXPECT_NEAR(logp.grad().item<double>(), dwant, 1e-6) << to_string(k);
  }
  // low_var_kl clamps at 10: x = -20 -> exp(20) - 21 is huge -> 10.
  EXPECT_NEAR(kl_penalty(torch::full({1, 1}, -21.0), torch::full({1, 1}, -1.0), KlType::LowVarKl).item<double>(),
              10.0, 1e-6);
  // Inside the loss: A = 0, kl_coef 0.5, token-mean over one token: 0.5 * 0.0187308.
  PolicyLossConfig cfg;
  cfg.kl_coef = 0.5;
  cfg.agg_mode = AggMode::TokenMean;
  auto logp = torch::full({1, 1}, -1.0).requires_grad_(true);
  const auto t = compute_policy_loss(logp, logp.detach(), logp.detach(), torch::zeros({1, 1}), torch::ones({1, 1}),
                                     1.0, cfg, torch::Tensor(), torch::full({1, 1}, -1.2));
  EXPECT_NEAR(t.loss.item<double>(), 0.5 * 0.0187308, 1e-6);
  EXPECT_NEAR(t.kl, 0.0187308, 1e-6);
  t.loss.backward();
  EXPECT_NEAR(logp.grad().item<double>(), 0.5 * 0.181269, 1e-6);
  // kl_coef without ref_logp is an error.
  EXPECT_THROW(compute_policy_loss(logp, logp.detach(), logp.detach(), torch::zeros({1, 1}), torch::ones({1, 1}),
                                   1.0, cfg),
               spade::Error);
}

// ---------------------------------------------------------------- TIS (trainer-anchors §4)

TEST(PolicyLoss, TisAnchor) {
  // train (old) logp -1, rollout logp -2: raw weight e = 2.718, capped 2.0; A = 0.866, r = 1:
  // loss = -0.866 * 2 = -1.732. Gradient d/dlogp = -A * w * r = -1.732 (w detached).
  auto logp = torch::full({1, 1}, -1.0).requires_grad_(true);
  PolicyLossConfig cfg;
  cfg.agg_mode = AggMode::TokenMean;
  const auto t = compute_policy_loss(logp, torch::full({1, 1}, -1.0), torch::full({1, 1}, -2.0),
                                     torch::full({1, 1}, 0.866), torch::ones({1, 1}), 1.0, cfg);
  EXPECT_NEAR(t.loss.item<double>(), -1.732, 1e-5);
  EXPECT_NEAR(t.tis_mean, 2.0, 1e-6);
  EXPECT_DOUBLE_EQ(t.tis_clipfrac, 1.0);
  EXPECT_NEAR(t.rollout_logp_abs_diff, 1.0, 1e-6);
  t.loss.backward();
  EXPECT_NEAR(logp.grad().item<double>(), -1.732, 1e-5);
  // TIS off: weight 1 -> -0.866.
  cfg.tis = false;
  const auto off = compute_policy_loss(logp.detach(), torch::full({1, 1}, -1.0), torch::full({1, 1}, -2.0),
                                       torch::full({1, 1}, 0.866), torch::ones({1, 1}), 1.0, cfg);
  EXPECT_NEAR(off.loss.item<double>(), -0.866, 1e-6);
  // Below the lower cap: raw exp(-1) = 0.368 with tis_low 0.5 -> 0.5.
  cfg.tis = true;
  cfg.tis_low = 0.5;
  const auto low = compute_policy_loss(logp.detach(), torch::full({1, 1}, -2.0), torch::full({1, 1}, -1.0),
                                       torch::full({1, 1}, 0.866), torch::ones({1, 1}), 1.0, cfg);
  EXPECT_NEAR(low.tis_mean, 0.5, 1e-6);
  EXPECT_DOUBLE_EQ(low.tis_clipfrac, 1.0);
}

// Sequence-level TIS (verl rollout-IS "sequence" / "geometric"; policy_loss.h TisLevel). Row 0 has two
// trainable tokens with log-ratios old - rollout = 0.3 and 0.5 and a masked third token with 3.0 (must
// be ignored); row 1 one token with -0.2 (then padding). r = 1 (logp = old), A = 1, token-mean over the
// 3 trainable tokens, so loss = -(sum of the tokens' weights) / 3. By hand:
//   token:     w = e^0.3 = 1.349859, e^0.5 = 1.648721, e^-0.2 = 0.818731 -> loss -1.272437
//   sequence:  row 0 e^0.8 = 2.225541 -> capped 2.0 (both tokens), row 1 e^-0.2 = 0.818731
//              -> loss -(2 + 2 + 0.818731) / 3 = -1.606244; clipped tokens 2 of 3
//   geometric: row 0 e^((0.3 + 0.5) / 2) = e^0.4 = 1.491825, row 1 e^-0.2 -> loss -1.267460
//              (counting the masked 3.0 would give e^(3.8/3) = 3.55 -> 2.0)
//   geometric with tis_low 0.9: row 1 0.818731 -> 0.9: loss -(2 * 1.491825 + 0.9) / 3 = -1.294550, clipped 1/3
TEST(PolicyLoss, SequenceLevelTisAnchors) {
  const auto old = t2({{-1.0, -1.0, -1.0}, {-1.0, 0.0, 0.0}});
  const auto roll = t2({{-1.3, -1.5, -4.0}, {-0.8, 0.0, 0.0}});
  const auto mask = t2({{1, 1, 0}, {1, 0, 0}});
  const auto adv = t2({{1, 1, 1}, {1, 1, 1}});
  auto run = [&](TisLevel level, double tis_low) {
    PolicyLossConfig cfg;
    cfg.agg_mode = AggMode::TokenMean;
    cfg.tis_level = level;
    cfg.tis_low = tis_low;
    auto logp = old.clone().requires_grad_(true);
    PolicyLossTerms t = compute_policy_loss(logp, old, roll, adv, mask, 3.0, cfg);
    t.loss.backward();
    return std::make_pair(t, logp.grad());
  };
  auto [tok, tok_g] = run(TisLevel::Token, 0.0);
  EXPECT_NEAR(tok.loss.item<double>(), -1.272437, 1e-5);
  EXPECT_DOUBLE_EQ(tok.tis_clipfrac, 0.0);
  auto [seq, seq_g] = run(TisLevel::Sequence, 0.0);
  EXPECT_NEAR(seq.loss.item<double>(), -1.606244, 1e-5);
  EXPECT_NEAR(seq.tis_mean, 1.606244, 1e-5);
  EXPECT_NEAR(seq.tis_clipfrac, 2.0 / 3.0, 1e-12);
  // The weight is a constant per sequence: d loss / d logp_t = -A * r * w / 3 on trainable tokens, 0 on masked.
  EXPECT_NEAR(seq_g[0][0].item<double>(), -2.0 / 3.0, 1e-6);
  EXPECT_NEAR(seq_g[0][1].item<double>(), -2.0 / 3.0, 1e-6);
  EXPECT_EQ(seq_g[0][2].item<double>(), 0.0);
  EXPECT_NEAR(seq_g[1][0].item<double>(), -0.818731 / 3.0, 1e-6);
  auto [geo, geo_g] = run(TisLevel::Geometric, 0.0);
  EXPECT_NEAR(geo.loss.item<double>(), -1.267460, 1e-5);
  EXPECT_DOUBLE_EQ(geo.tis_clipfrac, 0.0);
  auto [geo_low, geo_low_g] = run(TisLevel::Geometric, 0.9);
  EXPECT_NEAR(geo_low.loss.item<double>(), -1.294550, 1e-5);
  EXPECT_NEAR(geo_low.tis_clipfrac, 1.0 / 3.0, 1e-12);
  for (auto l : {TisLevel::Token, TisLevel::Sequence, TisLevel::Geometric}) EXPECT_EQ(parse_tis_level(to_string(l)), l);
  EXPECT_EQ(parse_tis_level("sequence"), TisLevel::Sequence);
  EXPECT_THROW(parse_tis_level("seq"), spade::Error);
}

// ---------------------------------------------------------------- masks, empty batches, shapes

TEST(PolicyLoss, PaddingCannotPoisonLoss) {
  // Masked positions hold -inf / NaN (padding): loss and gradient stay finite; masked grads are 0.
  const double inf = std::numeric_limits<double>::infinity();
  auto logp = t2({{-0.5, -inf}}).requires_grad_(true);
  const auto old = t2({{-0.5, std::nan("")}});
  const auto roll = t2({{-0.5, -inf}});
  PolicyLossConfig cfg;
  cfg.kl_coef = 0.1;
  const auto t = compute_policy_loss(logp, old, roll, t2({{1.0, 1.0}}), t2({{1, 0}}), 1.0, cfg, t2({{0.3, std::nan("")}}),
                                     t2({{-0.5, -inf}}));
  EXPECT_NEAR(t.loss.item<double>(), -1.0, 1e-6);
  t.loss.backward();
  EXPECT_TRUE(torch::isfinite(logp.grad()).all().item<bool>());
  EXPECT_EQ(logp.grad()[0][1].item<double>(), 0.0);
}

TEST(PolicyLoss, EmptyBatchGivesConnectedZero) {
  auto logp = torch::zeros({2, 3}).requires_grad_(true);
  const auto z = torch::zeros({2, 3});
  const auto t = compute_policy_loss(logp, z, z, torch::ones({2, 3}), z, /*normaliser=*/0.0, PolicyLossConfig{});
  EXPECT_EQ(t.loss.item<double>(), 0.0);
  t.loss.backward();  // must not throw: the zero is part of the graph
  EXPECT_EQ(logp.grad().abs().sum().item<double>(), 0.0);
  EXPECT_EQ(t.num_tokens, 0);
}

TEST(PolicyLoss, ShapeErrors) {
  auto logp = torch::zeros({2, 3}).requires_grad_(true);
  const auto z = torch::zeros({2, 3});
  EXPECT_THROW(compute_policy_loss(logp, torch::zeros({2, 4}), z, z, z, 1.0), spade::Error);
  EXPECT_THROW(compute_policy_loss(torch::zeros({6}), z, z, z, z, 1.0), spade::Error);
  PolicyLossConfig cfg;
  cfg.entropy_coef = 0.01;
  EXPECT_THROW(compute_policy_loss(logp, z, z, z, z, 1.0, cfg), spade::Error);
}

// ---------------------------------------------------------------- micro-batch invariance

TEST(PolicyLoss, MicroBatchesSumToWholeBatch) {
  // 8 sequences, 4 micro-batches of 2; the loss and the gradient summed over micro-batches with the
  // global normaliser must equal the whole-batch values, in every aggregation mode.
  torch::manual_seed(7);
  const int64_t B = 8, T = 6;
  const auto base = -torch::rand({B, T}, torch::kFloat64) * 2.0 - 0.1;
  const auto old = base + 0.3 * torch::randn({B, T}, torch::kFloat64);
  const auto roll = old + 0.5 * torch::randn({B, T}, torch::kFloat64);
  const auto ref = old + 0.2 * torch::randn({B, T}, torch::kFloat64);
  const auto adv = torch::randn({B, 1}, torch::kFloat64).expand({B, T}).contiguous();
  const auto ent_vals = torch::rand({B, T}, torch::kFloat64);
  auto mask = torch::zeros({B, T}, torch::kFloat64);
  const int64_t lens[B] = {6, 2, 0, 5, 1, 3, 6, 4};  // row 2 fully masked (padding copy)
  for (int64_t b = 0; b < B; ++b)
    if (lens[b] > 0) mask[b].narrow(0, 0, lens[b]).fill_(1.0);
  // a prompt-like hole in row 0
  mask[0][1] = 0.0;

  for (AggMode mode : {AggMode::TokenMean, AggMode::SeqMeanTokenMean, AggMode::SeqMeanTokenSum, AggMode::DrGrpo}) {
    PolicyLossConfig cfg;
    cfg.agg_mode = mode;
    cfg.dual_clip_c = 3.0;
    cfg.kl_coef = 0.05;
    cfg.entropy_coef = 0.01;
    std::vector<torch::Tensor> micro_masks;
    for (int64_t i = 0; i < 4; ++i) micro_masks.push_back(mask.narrow(0, 2 * i, 2));
    const double norm = global_normaliser(mode, micro_masks, /*max_len=*/T);
    EXPECT_DOUBLE_EQ(norm, global_normaliser(mode, {mask}, T));

    auto logp_full = base.clone().requires_grad_(true);
    auto ent_full = ent_vals.clone().requires_grad_(true);
    const auto full = compute_policy_loss(logp_full, old, roll, adv, mask, norm, cfg, ent_full, ref);
    full.loss.backward();

    auto logp_mb = base.clone().requires_grad_(true);
    auto ent_mb = ent_vals.clone().requires_grad_(true);
    double sum = 0.0, pg_sum = 0.0;
    for (int64_t i = 0; i < 4; ++i) {
      const auto part = compute_policy_loss(logp_mb.narrow(0, 2 * i, 2), old.narrow(0, 2 * i, 2),
                                            roll.narrow(0, 2 * i, 2), adv.narrow(0, 2 * i, 2),
                                            mask.narrow(0, 2 * i, 2), norm, cfg, ent_mb.narrow(0, 2 * i, 2),
                                            ref.narrow(0, 2 * i, 2));
      part.loss.backward();
      sum += part.loss.item<double>();
      pg_sum += part.pg_loss;
    }
    EXPECT_NEAR(sum, full.loss.item<double>(), 1e-12) << to_string(mode);
    EXPECT_NEAR(pg_sum, full.pg_loss, 1e-12) << to_string(mode);
    EXPECT_TRUE(torch::allclose(logp_mb.grad(), logp_full.grad(), 1e-10, 1e-12)) << to_string(mode);
    EXPECT_TRUE(torch::allclose(ent_mb.grad(), ent_full.grad(), 1e-10, 1e-12)) << to_string(mode);
    EXPECT_NE(full.loss.item<double>(), 0.0);
  }
}

// ---------------------------------------------------------------- gradient vs finite differences

TEST(PolicyLoss, GradientMatchesFiniteDifferences) {
  // float64, 2 x 4 tokens covering: inside the clip range, clipped (zero gradient), below 1 - eps_low
  // with A > 0 (unclipped), dual-clipped (zero PG gradient), a masked token; TIS, KL and entropy on.
  // Log-ratios stay away from the kinks (r = 0.8, 1.28, 3) by far more than the step h.
  const auto old = t2({{-1.0, -0.7, -2.0, -0.4}, {-1.5, -0.3, -0.9, -1.1}}, torch::kFloat64);
  const auto delta = t2({{0.1, 0.5, -0.3, 0.05}, {1.5, -0.1, 0.2, 0.3}}, torch::kFloat64);
  const auto roll = old + t2({{0.2, -0.9, 0.0, 0.3}, {-0.1, 0.4, 0.05, 0.0}}, torch::kFloat64);
  const auto adv = t2({{0.8, 0.8, 0.8, 0.8}, {-1.2, -1.2, -1.2, -1.2}}, torch::kFloat64);
  const auto mask = t2({{1, 1, 1, 0}, {1, 1, 1, 1}}, torch::kFloat64);
  const auto ref = old - 0.15;
  const auto ent = t2({{0.5, 0.9, 1.3, 0.2}, {0.7, 0.1, 0.4, 0.6}}, torch::kFloat64);

  for (AggMode mode : {AggMode::TokenMean, AggMode::SeqMeanTokenMean, AggMode::SeqMeanTokenSum, AggMode::DrGrpo}) {
    PolicyLossConfig cfg;
    cfg.agg_mode = mode;
    cfg.dual_clip_c = 3.0;
    cfg.kl_coef = 0.3;
    cfg.entropy_coef = 0.05;
    const double norm = global_normaliser(mode, {mask}, 5);
    auto f = [&](const torch::Tensor& logp, const torch::Tensor& e) {
      return compute_policy_loss(logp, old, roll, adv, mask, norm, cfg, e, ref).loss;
    };
    auto logp = (old + delta).clone().requires_grad_(true);
    auto e = ent.clone().requires_grad_(true);
    f(logp, e).backward();
    const double h = 1e-6;
    for (int64_t b = 0; b < 2; ++b) {
      for (int64_t t = 0; t < 4; ++t) {
        auto plus = (old + delta).clone();
        auto minus = (old + delta).clone();
        plus[b][t] += h;
        minus[b][t] -= h;
        const double fd = (f(plus, ent).item<double>() - f(minus, ent).item<double>()) / (2 * h);
        EXPECT_NEAR(logp.grad()[b][t].item<double>(), fd, 1e-7) << to_string(mode) << " logp[" << b << "][" << t << "]";
        auto ep = ent.clone(), em = ent.clone();
        ep[b][t] += h;
        em[b][t] -= h;
        const double fde = (f(old + delta, ep).item<double>() - f(old + delta, em).item<double>()) / (2 * h);
        EXPECT_NEAR(e.grad()[b][t].item<double>(), fde, 1e-7) << to_string(mode) << " entropy[" << b << "][" << t << "]";
      }
    }
    // Clipped (b0 t1: r = e^0.5 > 1.28, A > 0) and dual-clipped (b1 t0: r = e^1.5 > 3, A < 0) tokens get
    // only the KL gradient; the masked token (b0 t3) none.
    EXPECT_EQ(logp.grad()[0][3].item<double>(), 0.0);
  }
}
