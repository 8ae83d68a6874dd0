// The learner side of the self-play loop (docs/design.md "One self-play step", steps 4-5): it consumes plain
// samples and rewards produced by the rollout side (selfplay_rollout.cpp) and knows nothing of Python
// environments, the corpus or the designer: the delayed designer scoring of buffered samples, the
// learning-rate schedule, the data-parallel deal of the mixed batch and grpo_update. Not thread-safe
// (the optimizer and the model are mutated); collective over the ranks when `dist` is active.
#pragma once
#include <cstdint>
#include <optional>
#include <torch/torch.h>
#include <vector>

#include "policy/transformer.h"
#include "reward/learning_potential.h"
#include "rollout/sample.h"
#include "trainer/batch_filters.h"
#include "trainer/config.h"
#include "trainer/distributed.h"
#include "trainer/selfplay_state.h"
#include "trainer/step_record.h"

namespace spade::trainer {

/// Buffered designer samples scored over their window, ready to train.
struct DesignerBatch {
  std::vector<rollout::Sample> samples;  // the buffer, in order, with reward and advantage set
  DesignerScoringRecord record;
};

/// Scores `buffer` (the live generation's designer samples) with score_designer_samples
/// (selfplay_bookkeeping.h) under config.reward / config.selfplay, advancing `ema` one round; returns
/// the samples with their raw reward and advantage. Throws what score_designer_samples throws.
DesignerBatch score_designer_buffer(std::vector<rollout::Sample> buffer, const std::vector<LiveEnv>& live,
                                    reward::LearningPotentialTracker& ema, const Config& config);

/// What train_step did.
struct TrainResult {
  double lr = 0;             // the step's learning rate (optim.lr_schedule at rollout t)
  UpdateStats update;        // this rank's grpo_update statistics
  std::optional<double> mfu; // train.peak_tflops > 0 and the update took time: update_mfu of this rank's share
};

/// Everything the update needs besides the batch; all references outlive the call.
struct Learner {
  const Config& config;
  policy::Transformer model;
  torch::optim::Optimizer& optimizer;
  const DistributedContext& dist;
  policy::Transformer kl_reference;  // null unless loss.kl_coef != 0
};

/// Rollout t's update: sets the scheduled learning rate on every parameter group, then one
/// grpo_update (optim.mini_batches PPO steps) on `batch` = [designer samples (n_designer) | agent plays
/// in groups of selfplay.plays_per_env], without the plays filter.keep drops. Data parallel: each
/// rank trains its batch_share (the groups it played, its deal of designer samples), dropped plays
/// blanked before the deal so positions and groups are unchanged. Every rank must call it.
TrainResult train_step(const Learner& learner, int64_t t, const std::vector<rollout::Sample>& batch, size_t n_designer,
                       const BatchFilterResult& filter);

}  // namespace spade::trainer
