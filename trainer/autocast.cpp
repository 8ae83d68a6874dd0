#include "trainer/autocast.h"

#include "common/error.h"
#include "policy/torch_compat.h"

namespace spade::trainer {

bool parse_autocast(const std::string& mode) {
  if (mode == "none") return false;
  if (mode == "bf16") return true;
  throw Error("config: train.autocast must be none or bf16, not '" + mode + "'");
}

AutocastScope::AutocastScope(const c10::Device& device, bool enabled) {
  if (!enabled) return;
  if (!device.is_cpu() && !device.is_cuda())
    throw Error("train.autocast=bf16: autocast supports cpu and cuda devices, not " + device.str());
  type_ = device.type();
  prev_enabled_ = compat::autocast_enabled(type_);
  prev_dtype_ = compat::autocast_dtype(type_);
  compat::set_autocast_enabled(type_, true);
  compat::set_autocast_dtype(type_, c10::ScalarType::BFloat16);
  at::autocast::increment_nesting();
  active_ = true;
}

AutocastScope::~AutocastScope() {
  if (!active_) return;
  // As torch.autocast.__exit__: the outermost exit drops the cached bf16 copies of the weights.
  if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
  compat::set_autocast_enabled(type_, prev_enabled_);
  compat::set_autocast_dtype(type_, prev_dtype_);
}

}  // namespace spade::trainer
