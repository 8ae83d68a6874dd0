// Converts the YAML-facing config sections into the option structs of reward/ and the loss.
#pragma once
#include "reward/designer_reward.h"
#include "trainer/config.h"
#include "trainer/policy_loss.h"

namespace spade::trainer {

/// loss.* -> PolicyLossConfig. Throws spade::Error for an unknown agg_mode.
PolicyLossConfig loss_config(const LossYaml& loss);

/// reward.* -> the blend configuration (weights, regret scale, plateau band).
reward::BlendConfig blend_config(const RewardYaml& reward);

/// reward.* -> the designer reward variant and its parameters. Throws for an unknown variant.
reward::DesignerRewardConfig designer_reward_config(const RewardYaml& reward);

}  // namespace spade::trainer
