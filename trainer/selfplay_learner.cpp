#include "trainer/selfplay_learner.h"

#include "trainer/config_bridge.h"
#include "trainer/grpo_update.h"
#include "trainer/lr_schedule.h"
#include "trainer/selfplay_bookkeeping.h"
#include "trainer/selfplay_dp.h"
#include "trainer/step_bench.h"

namespace spade::trainer {

DesignerBatch score_designer_buffer(std::vector<rollout::Sample> buffer, const std::vector<LiveEnv>& live,
                                    reward::LearningPotentialTracker& ema, const Config& config) {
  // Blend (or variant) reward over each environment's k-step window, per-skill centring, scale S,
  // trained now with truncated IS against the rollout logprobs of step t - k (reference §5).
  std::vector<DesignerSampleKey> keys;
  for (const rollout::Sample& s : buffer) keys.push_back({s.env_id, s.skill});
  DesignerScoring options;
  options.reward = designer_reward_config(config.reward);
  options.plays_per_env = config.selfplay.plays_per_env;
  options.k = config.selfplay.k;
  options.scale_cap = config.reward.designer_scale_cap;
  const DesignerScores scores = score_designer_samples(keys, live, ema, options);
  for (size_t i = 0; i < buffer.size(); ++i) {
    buffer[i].reward = scores.rewards[i];
    buffer[i].advantage = scores.advantages[i];
  }
  DesignerBatch out;
  out.record = {scores.blend_mean, scores.scale, static_cast<int64_t>(buffer.size()), static_cast<int64_t>(buffer.size()),
                scores.lp_gap};
  out.samples = std::move(buffer);
  return out;
}


TrainResult train_step(const Learner& learner, int64_t t, const std::vector<rollout::Sample>& batch, size_t n_designer,
                       const BatchFilterResult& filter) {
  TrainResult out;
  out.lr = learning_rate(lr_schedule(learner.config), t);
  for (torch::optim::OptimizerParamGroup& group : learner.optimizer.param_groups()) group.options().set_lr(out.lr);
  // Data parallel: each rank trains the environments it played (and its deal of designer samples).
  // Filtered plays stay in `batch` (rollouts.h5 logs them with trained = 0) but not in what is trained.
  // batch_share deals the agent part by position in whole groups of plays_per_env (the groups each rank
  // played), so removing plays before the deal would shift the later ones to other ranks and cut groups
  // apart (mask_truncated drops single plays). So the dropped plays are blanked in place (no tokens),
  // the deal is unchanged, and each rank removes the blanks from its own share: every rank trains what
  // is left of exactly the groups it played, and grpo_update's all-reduced normaliser counts kept
  // samples only. An empty share (or all groups filtered) is fine: grpo_update then returns zeros.
  const DistributedContext& dist = learner.dist;
  const int group = learner.config.selfplay.plays_per_env;
  const bool filtered = filter.dropped > 0;
  std::vector<rollout::Sample> share;
  if (filtered) {
    share = blank_dropped(batch, n_designer, filter.keep);
    if (dist.active()) share = batch_share(dist, share, n_designer, group);
    remove_empty(share);
  } else if (dist.active()) {
    share = batch_share(dist, batch, n_designer, group);
  }
  const std::vector<rollout::Sample>& trained = filtered || dist.active() ? share : batch;
  policy::Transformer model = learner.model;  // a handle: the same module
  out.update = grpo_update(model, learner.optimizer, trained, update_options(learner.config, learner.kl_reference),
                           dist.active() ? &dist : nullptr);
  const double peak = learner.config.train.peak_tflops;
  if (peak > 0 && out.update.seconds > 0)  // this rank's update (trainer/step_bench.h)
    out.mfu = update_mfu(learner.model->config(), trained, out.update.seconds, peak);
  return out;
}

}  // namespace spade::trainer
