#include "trainer/lr_schedule.h"

#include <algorithm>
#include <cmath>

#include "common/error.h"

namespace spade::trainer {

double learning_rate(const LrSchedule& s, int64_t step) {
  if (s.kind != "constant" && s.kind != "linear_warmup" && s.kind != "cosine")
    throw Error("optim.lr_schedule: unknown schedule '" + s.kind + "' (constant, linear_warmup or cosine)");
  if (s.warmup_steps > 0 && step < s.warmup_steps)
    return s.base_lr * static_cast<double>(step + 1) / s.warmup_steps;
  if (s.kind != "cosine") return s.base_lr;
  const double span = std::max(1, s.total_steps - s.warmup_steps);
  const double p = std::clamp(static_cast<double>(step - s.warmup_steps) / span, 0.0, 1.0);
  const double pi = 3.14159265358979323846;
  return s.base_lr * (s.min_lr_ratio + (1.0 - s.min_lr_ratio) * 0.5 * (1.0 + std::cos(pi * p)));
}

}  // namespace spade::trainer
