// Learning-rate schedules of the self-play update (issue 5): constant, linear warmup, cosine.
// The rate is a pure function of the optimizer step index, so an exact resume needs only the step.
// Torch-free; thread-safe (pure functions).
#pragma once
#include <cstdint>
#include <string>

#include "trainer/config.h"

namespace spade::trainer {

// Defaults: the run config's optim.* (trainer/config.h OptimConfig); lr_schedule(config)
// (config_bridge.h) builds one from a config.
struct LrSchedule {
  std::string kind = OptimConfig{}.lr_schedule;  // constant | linear_warmup | cosine
  double base_lr = OptimConfig{}.lr;             // reference §5: Adam lr 1e-6 constant
  int warmup_steps = OptimConfig{}.warmup_steps;  // linear warmup from base_lr / warmup_steps to base_lr (all kinds)
  int total_steps = 0;            // cosine: the step at which the rate reaches min_lr_ratio * base_lr
  double min_lr_ratio = OptimConfig{}.min_lr_ratio;  // cosine floor as a fraction of base_lr
};

/// The rate of optimizer step `step` (0-based):
///   warmup (step < warmup_steps): base_lr * (step + 1) / warmup_steps   (every kind)
///   constant, linear_warmup: base_lr afterwards
///   cosine: base_lr * (min + (1 - min) * (1 + cos(pi * p)) / 2), p = (step - warmup) / (total - warmup)
///           clamped to [0, 1] (the HF/verl "cosine with warmup" shape, floor min_lr_ratio).
/// Throws spade::Error for an unknown kind.
double learning_rate(const LrSchedule& schedule, int64_t step);

}  // namespace spade::trainer
