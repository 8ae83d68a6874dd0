#include "trainer/config_bridge.h"

#include "trainer/sharded_optimizer.h"

namespace spade::trainer {

PolicyLossConfig loss_config(const LossYaml& l) {
  PolicyLossConfig c;
  c.eps_low = l.eps_low;
  c.eps_high = l.eps_high;
  if (l.dual_clip_c > 0) c.dual_clip_c = l.dual_clip_c;
  c.agg_mode = parse_agg_mode(l.agg_mode);
  c.max_len = l.max_len;
  c.tis = l.tis;
  c.tis_cap = l.tis_cap;
  c.tis_low = l.tis_low;
  c.tis_level = parse_tis_level(l.tis_level);
  c.entropy_coef = l.entropy_coef;
  c.kl_coef = l.kl_coef;
  c.kl_type = parse_kl_type(l.kl_type);
  return c;
}

reward::BlendConfig blend_config(const RewardYaml& r) {
  reward::BlendConfig b;
  b.regret_weight = r.w_regret;
  b.plateau_weight = r.w_anchor;
  b.regret_scale = r.regret_scale;
  b.plateau = {r.plateau_low, r.plateau_high, r.plateau_ramp};
  b.frontier_weight = r.frontier_weight;
  b.frontier_scale = r.frontier_scale;
  return b;
}

reward::DesignerRewardConfig designer_reward_config(const RewardYaml& r) {
  reward::DesignerRewardConfig c;
  c.variant = reward::parse_designer_reward(r.designer_reward);
  c.blend = blend_config(r);
  c.solver_variance = r.lp_variance_bonus;
  return c;
}

rollout::SamplingParams sampling(const SamplingYaml& s) {
  rollout::SamplingParams p;
  p.temperature = s.temperature;
  p.top_p = s.top_p;
  p.top_k = s.top_k;
  p.min_p = s.min_p;
  p.max_new_tokens = s.max_new_tokens;
  p.decode_graph = rollout::parse_decode_graph_mode(s.decode_graph, "decode_graph");
  return p;
}

rollout::EpisodeOptions episode_options(const Config& c) {
  rollout::EpisodeOptions o;
  o.sampling = sampling(c.selfplay.agent);
  o.max_turns = c.selfplay.max_turns;
  o.context_tokens = c.selfplay.context_tokens;
  o.max_batch = c.selfplay.max_batch;
  o.sampling.max_tokens_in_flight = c.selfplay.max_tokens_in_flight;
  o.max_turns_cap = c.selfplay.max_turns;
  o.episode_timeout_s = c.sandbox.episode_timeout_s;
  return o;
}

envsandbox::SandboxOptions sandbox_options(const SandboxYaml& s) {
  envsandbox::SandboxOptions o;
  o.load_timeout_s = s.load_timeout_s;
  o.call_timeout_s = s.call_timeout_s;
  o.memory_limit_bytes = static_cast<int64_t>(s.memory_limit_mb) << 20;
  o.cpu_limit_s = s.cpu_limit_s;
  o.namespaces = s.namespaces;
  o.seccomp = s.seccomp;
  o.cgroups = s.cgroups;
  o.pool_memory_bytes = static_cast<int64_t>(s.pool_memory_mb) << 20;
  o.spare_children = s.spare_children;
  o.preload_spares = s.preload_spares;
  o.spin_us = s.spin_us;
  o.max_obs_chars = s.max_obs_chars;
  return o;
}

UpdateOptions update_options(const Config& c, policy::Transformer reference) {
  UpdateOptions u;
  u.loss = loss_config(c.loss);
  u.micro_batch_tokens = c.optim.micro_batch_tokens;
  u.mini_batches = c.optim.mini_batches;  // PPO mini-batch steps, all at the rollout's lr
  u.grad_clip = c.optim.grad_clip;
  u.logprob_chunk_rows = c.optim.logprob_chunk_rows;
  u.reference = std::move(reference);
  u.autocast = c.train.autocast;
  return u;
}

LrSchedule lr_schedule(const Config& c) {
  LrSchedule s;
  s.kind = c.optim.lr_schedule;
  s.base_lr = c.optim.lr;
  s.warmup_steps = c.optim.warmup_steps;
  s.total_steps = c.selfplay.steps;
  s.min_lr_ratio = c.optim.min_lr_ratio;
  return s;
}

torch::optim::AdamW make_optimizer(policy::Transformer& model, const OptimConfig& o) {
  return torch::optim::AdamW(model->parameters(), torch::optim::AdamWOptions(o.lr)
                                                      .betas({o.beta1, o.beta2})
                                                      .weight_decay(o.weight_decay)
                                                      .eps(o.adam_eps));
}

std::unique_ptr<torch::optim::Optimizer> make_optimizer(policy::Transformer& model, const OptimConfig& o,
                                                        const std::string& sharding, const DistributedContext& dist,
                                                        c10::optional<c10::Device> full_device, bool full_prefetch) {
  const Sharding mode = parse_sharding(sharding);
  if (mode == Sharding::None) return std::make_unique<torch::optim::AdamW>(make_optimizer(model, o));
  const auto options = torch::optim::AdamWOptions(o.lr).betas({o.beta1, o.beta2}).weight_decay(o.weight_decay).eps(o.adam_eps);
  if (mode == Sharding::Full) return std::make_unique<ShardedAdamW>(model, options, dist, full_device, full_prefetch);
  return std::make_unique<ShardedAdamW>(model->parameters(), options, dist, mode);
}

DistributedOptions distributed_options(const DistributedYaml& d) {
  DistributedOptions o;
  o.backend = d.backend;
  o.bucket_bytes = static_cast<int64_t>(d.bucket_mb * (1 << 20));
  o.timeout_s = d.timeout_s;
  return o;
}

}  // namespace spade::trainer
