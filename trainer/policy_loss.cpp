#include "trainer/policy_loss.h"

#include <algorithm>

#include "common/error.h"

namespace spade::trainer {

namespace {

template <typename E>
struct Named {
  E value;
  const char* name;
};
constexpr Named<AggMode> kAggNames[] = {{AggMode::TokenMean, "token_mean"},
                                        {AggMode::SeqMeanTokenMean, "seq_mean_token_mean"},
                                        {AggMode::SeqMeanTokenSum, "seq_mean_token_sum"},
                                        {AggMode::DrGrpo, "dr_grpo"}};
constexpr Named<KlType> kKlNames[] = {
    {KlType::K1, "k1"}, {KlType::K2, "k2"}, {KlType::K3, "k3"}, {KlType::LowVarKl, "low_var_kl"}};
constexpr Named<TisLevel> kTisNames[] = {
    {TisLevel::Token, "token"}, {TisLevel::Sequence, "sequence"}, {TisLevel::Geometric, "geometric"}};

template <typename E, size_t N>
std::string name_of(const Named<E> (&table)[N], E value, const char* what) {
  for (const auto& e : table)
    if (e.value == value) return e.name;
  throw spade::Error(std::string("unknown ") + what + " value " + std::to_string(static_cast<int>(value)));
}

template <typename E, size_t N>
E parse_named(const Named<E> (&table)[N], const std::string& name, const char* what) {
  std::string valid;
  for (const auto& e : table) {
    if (name == e.name) return e.value;
    valid += valid.empty() ? "" : ", ";
    valid += e.name;
  }
  throw spade::Error(std::string("unknown ") + what + " '" + name + "'; valid names: " + valid);
}

std::string shape_str(const torch::Tensor& t) {
  std::string s = "[";
  for (int64_t i = 0; i < t.dim(); ++i) s += (i ? "," : "") + std::to_string(t.size(i));
  return s + "]";
}

void check_same_shape(const torch::Tensor& ref, const torch::Tensor& t, const char* name) {
  if (!t.defined()) throw spade::Error(std::string("compute_policy_loss: ") + name + " is undefined");
  if (t.sizes() != ref.sizes()) {
    throw spade::Error(std::string("compute_policy_loss: ") + name + " has shape " + shape_str(t) +
                       ", expected " + shape_str(ref) + " (the shape of logp)");
  }
}

// Masked mean over this call's tokens (metrics only).
double masked_mean(const torch::Tensor& x, const torch::Tensor& m, double count) {
  if (count <= 0.0) return 0.0;
  return (x * m).sum().item<double>() / count;
}

// Zero out masked positions so padding values (-inf logprobs, NaN) can never reach the loss or the
// gradient (where() on the input itself gives an exact 0 gradient there).
torch::Tensor masked_input(const torch::Tensor& x, const torch::Tensor& keep, c10::ScalarType ct) {
  auto v = x.to(ct);
  return torch::where(keep, v, torch::zeros_like(v));
}

}  // namespace

std::string to_string(AggMode mode) { return name_of(kAggNames, mode, "AggMode"); }
AggMode parse_agg_mode(const std::string& name) { return parse_named(kAggNames, name, "loss aggregation mode"); }
std::string to_string(KlType type) { return name_of(kKlNames, type, "KlType"); }
KlType parse_kl_type(const std::string& name) { return parse_named(kKlNames, name, "KL type"); }
std::string to_string(TisLevel level) { return name_of(kTisNames, level, "TisLevel"); }
TisLevel parse_tis_level(const std::string& name) { return parse_named(kTisNames, name, "TIS level"); }

torch::Tensor kl_penalty(const torch::Tensor& logp, const torch::Tensor& ref_logp, KlType type) {
  const torch::Tensor x = logp - ref_logp.detach();
  switch (type) {
    case KlType::K1:
      return x;
    case KlType::K2:
      return 0.5 * x * x;
    case KlType::K3:
      return torch::exp(-x) - 1.0 + x;
    case KlType::LowVarKl: {
      // verl low_var_kl: log-ratio clamped to +-20 before exp, estimate clamped to +-10.
      const torch::Tensor xc = torch::clamp(x, -20.0, 20.0);
      return torch::clamp(torch::exp(-xc) - 1.0 + xc, -10.0, 10.0);
    }
  }
  throw spade::Error("kl_penalty: unknown KlType");
}

torch::Tensor aggregate_loss(const torch::Tensor& token_values, const torch::Tensor& loss_mask, AggMode mode,
                             double normaliser) {
  if (token_values.sizes() != loss_mask.sizes() || token_values.dim() != 2) {
    throw spade::Error("aggregate_loss: token values " + shape_str(token_values) + " and loss mask " +
                       shape_str(loss_mask) + " must both be [B,T]");
  }
  const torch::Tensor m = loss_mask.to(token_values.scalar_type());
  const torch::Tensor masked = torch::where(m > 0, token_values, torch::zeros_like(token_values)) * m;
  if (!(normaliser > 0.0)) return masked.sum() * 0.0;  // no tokens anywhere: zero, still in the graph
  switch (mode) {
    case AggMode::TokenMean:
    case AggMode::SeqMeanTokenSum:
    case AggMode::DrGrpo:
      return masked.sum() / normaliser;
    case AggMode::SeqMeanTokenMean: {
      const torch::Tensor per_seq = masked.sum(1) / torch::clamp_min(m.sum(1), 1.0);
      return per_seq.sum() / normaliser;
    }
  }
  throw spade::Error("aggregate_loss: unknown AggMode");
}

double global_normaliser(AggMode mode, const std::vector<torch::Tensor>& loss_masks, int64_t max_len) {
  double tokens = 0.0;
  int64_t rows = 0, longest = 0;
  for (const auto& m : loss_masks) {
    if (!m.defined()) continue;
    if (m.dim() != 2) throw spade::Error("global_normaliser: loss mask has shape " + shape_str(m) + ", expected [B,T]");
    rows += m.size(0);
    longest = std::max<int64_t>(longest, m.size(1));
    if (mode == AggMode::TokenMean) tokens += m.to(torch::kFloat64).sum().item<double>();
  }
  switch (mode) {
    case AggMode::TokenMean:
      return tokens;
    case AggMode::SeqMeanTokenMean:
    case AggMode::SeqMeanTokenSum:
      return static_cast<double>(rows);
    case AggMode::DrGrpo:
      return static_cast<double>(rows) * static_cast<double>(max_len > 0 ? max_len : longest);
  }
  throw spade::Error("global_normaliser: unknown AggMode");
}

PolicyLossTerms compute_policy_loss(const torch::Tensor& logp, const torch::Tensor& old_logp,
                                    const torch::Tensor& rollout_logp, const torch::Tensor& advantages,
                                    const torch::Tensor& loss_mask, double normaliser, const PolicyLossConfig& cfg,
                                    const torch::Tensor& entropy, const torch::Tensor& ref_logp) {
  if (!logp.defined() || logp.dim() != 2) {
    throw spade::Error("compute_policy_loss: logp must be a [B,T] tensor, got " +
                       (logp.defined() ? shape_str(logp) : std::string("undefined")));
  }
  check_same_shape(logp, old_logp, "old_logp");
  check_same_shape(logp, rollout_logp, "rollout_logp");
  check_same_shape(logp, advantages, "advantages");
  check_same_shape(logp, loss_mask, "loss_mask");
  if (cfg.entropy_coef != 0.0 && !entropy.defined())
    throw spade::Error("compute_policy_loss: entropy_coef is " + std::to_string(cfg.entropy_coef) +
                       " but no entropy tensor was given");
  if (cfg.kl_coef != 0.0 && !ref_logp.defined())
    throw spade::Error("compute_policy_loss: kl_coef is " + std::to_string(cfg.kl_coef) +
                       " but no ref_logp tensor was given");
  if (entropy.defined()) check_same_shape(logp, entropy, "entropy");
  if (ref_logp.defined()) check_same_shape(logp, ref_logp, "ref_logp");
  if (cfg.dual_clip_c && !(*cfg.dual_clip_c > 1.0))
    throw spade::Error("compute_policy_loss: dual_clip_c must be > 1, got " + std::to_string(*cfg.dual_clip_c));
  if (!(cfg.eps_low >= 0.0 && cfg.eps_low < 1.0 && cfg.eps_high >= 0.0))
    throw spade::Error("compute_policy_loss: need 0 <= eps_low < 1 and eps_high >= 0");
  if (cfg.tis && !(cfg.tis_low <= cfg.tis_cap))
    throw spade::Error("compute_policy_loss: need tis_low <= tis_cap");

  const c10::ScalarType ct = logp.scalar_type() == torch::kFloat64 ? torch::kFloat64 : torch::kFloat32;
  const torch::Tensor keep = loss_mask.detach() > 0;
  const torch::Tensor m = keep.to(ct);
  const torch::Tensor lp = masked_input(logp, keep, ct);
  const torch::Tensor old = masked_input(old_logp.detach(), keep, ct);
  const torch::Tensor roll = masked_input(rollout_logp.detach(), keep, ct);
  const torch::Tensor adv = masked_input(advantages.detach(), keep, ct);

  PolicyLossTerms out;
  const double count = m.sum().item<double>();
  out.num_tokens = static_cast<int64_t>(count);

  // PPO clip with clip-higher.
  const torch::Tensor log_ratio = torch::clamp(lp - old, -cfg.log_ratio_clamp, cfg.log_ratio_clamp);
  const torch::Tensor ratio = torch::exp(log_ratio);
  const torch::Tensor pg1 = -adv * ratio;
  const torch::Tensor pg2 = -adv * torch::clamp(ratio, 1.0 - cfg.eps_low, 1.0 + cfg.eps_high);
  const torch::Tensor clip1 = torch::maximum(pg1, pg2);
  torch::Tensor pg = clip1;
  {
    torch::NoGradGuard guard;
    out.pg_clipfrac = masked_mean((pg2 > pg1).to(ct), m, count);
    out.ppo_kl = masked_mean(old - lp, m, count);
  }
  // Dual clip: for A < 0 the loss is capped at -c*A.
  if (cfg.dual_clip_c) {
    const torch::Tensor pg3 = -adv * *cfg.dual_clip_c;
    const torch::Tensor neg = adv < 0;
    pg = torch::where(neg, torch::minimum(clip1, pg3), clip1);
    torch::NoGradGuard guard;
    out.pg_clipfrac_lower = masked_mean(((clip1 > pg3) & neg).to(ct), m, count);
  }

  // Truncated importance sampling on the PG term only, after clipping.
  torch::Tensor tis_w;
  {
    torch::NoGradGuard guard;
    if (cfg.tis) {
      // Log importance weight per token, or per sequence broadcast over its tokens (TisLevel). Masked
      // positions are 0 in `old` and `roll` (masked_input), so the row sums cover trainable tokens only.
      torch::Tensor log_w = old - roll;
      if (cfg.tis_level != TisLevel::Token) {
        torch::Tensor seq = (log_w * m).sum(1, /*keepdim=*/true);
        if (cfg.tis_level == TisLevel::Geometric) seq = seq / torch::clamp_min(m.sum(1, true), 1.0);
        log_w = seq.expand_as(lp);
      }
      const torch::Tensor raw = torch::exp(log_w);
      tis_w = torch::clamp(raw, cfg.tis_low, cfg.tis_cap);
      out.tis_clipfrac = masked_mean(((raw > cfg.tis_cap) | (raw < cfg.tis_low)).to(ct), m, count);
    } else {
      tis_w = torch::ones_like(lp);
    }
    out.tis_mean = masked_mean(tis_w, m, count);
    out.rollout_logp_abs_diff = masked_mean(torch::abs(old - roll), m, count);
  }
  const torch::Tensor pg_w = pg * tis_w;

  const torch::Tensor pg_agg = aggregate_loss(pg_w, m, cfg.agg_mode, normaliser);
  torch::Tensor loss = pg_agg;
  out.pg_loss = pg_agg.item<double>();

  if (ref_logp.defined()) {
    const torch::Tensor ref = masked_input(ref_logp.detach(), keep, ct);
    const torch::Tensor kl_agg = aggregate_loss(kl_penalty(lp, ref, cfg.kl_type), m, cfg.agg_mode, normaliser);
    out.kl = kl_agg.item<double>();
    if (cfg.kl_coef != 0.0) loss = loss + cfg.kl_coef * kl_agg;
  }
  if (entropy.defined()) {
    const torch::Tensor ent = torch::where(keep, entropy.to(ct), torch::zeros_like(lp));
    const torch::Tensor ent_agg = aggregate_loss(ent, m, cfg.agg_mode, normaliser);
    out.entropy = ent_agg.item<double>();
    if (cfg.entropy_coef != 0.0) loss = loss - cfg.entropy_coef * ent_agg;
  }
  out.loss = loss;
  return out;
}

}  // namespace spade::trainer
