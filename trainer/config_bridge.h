// Converts the YAML-facing config sections into the option structs of reward/, rollout/, the
// sandbox and the loss: the one place where config keys meet library options.
#pragma once
#include <memory>

#include "envsandbox/sandbox.h"
#include "reward/designer_reward.h"
#include "rollout/episode.h"
#include "rollout/sampler.h"
#include "trainer/config.h"
#include "trainer/distributed.h"
#include "trainer/grpo_update.h"
#include "trainer/lr_schedule.h"
#include "trainer/policy_loss.h"

namespace spade::trainer {

/// loss.* -> PolicyLossConfig (max_len, tis_level included). Throws spade::Error for an unknown
/// agg_mode, kl_type or tis_level.
PolicyLossConfig loss_config(const LossYaml& loss);

/// reward.* -> the blend configuration (weights, regret scale, plateau band).
reward::BlendConfig blend_config(const RewardYaml& reward);

/// reward.* -> the designer reward variant and its parameters. Throws for an unknown variant.
reward::DesignerRewardConfig designer_reward_config(const RewardYaml& reward);

/// selfplay.<role>.* -> sampling parameters (stop tokens are added by the caller).
rollout::SamplingParams sampling(const SamplingYaml& s);

/// selfplay.* -> agent episode options (agent sampling, turn cap, context budget, batch).
rollout::EpisodeOptions episode_options(const Config& c);

/// sandbox.* -> sandbox options (timeouts in seconds, memory in MiB converted to bytes).
envsandbox::SandboxOptions sandbox_options(const SandboxYaml& s);

/// loss.*, optim.* (micro_batch_tokens, mini_batches, grad_clip, logprob_chunk_rows) and
/// train.autocast -> the options of grpo_update, with `reference` the frozen KL reference policy
/// (null unless loss.kl_coef != 0). The one builder of UpdateOptions for the trainer and the benches.
UpdateOptions update_options(const Config& c, policy::Transformer reference = nullptr);

/// optim.* -> the self-play learning-rate schedule over selfplay.steps rollouts (one step a rollout).
LrSchedule lr_schedule(const Config& c);

/// optim.* -> AdamW over `model`'s parameters (lr, betas, weight decay, eps): the self-play optimizer,
/// as the trainer and the benches build it.
torch::optim::AdamW make_optimizer(policy::Transformer& model, const OptimConfig& o);
/// The run's optimizer: make_optimizer's AdamW for distributed.sharding none, else a ShardedAdamW
/// with the same options over `dist` (trainer/sharded_optimizer.h; `dist` must outlive it); for full
/// (ZeRO-3) it shards `model`'s parameters onto `full_device` (default: where they are), which are then
/// empty outside its training steps, prefetching each next layer unless `full_prefetch` is false.
/// Throws spade::Error for an unknown sharding name.
std::unique_ptr<torch::optim::Optimizer> make_optimizer(policy::Transformer& model, const OptimConfig& o,
                                                        const std::string& sharding, const DistributedContext& dist,
                                                        c10::optional<c10::Device> full_device = c10::nullopt,
                                                        bool full_prefetch = true);

/// distributed.* -> process-group options (bucket size in MiB converted to bytes).
DistributedOptions distributed_options(const DistributedYaml& d);

}  // namespace spade::trainer
