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
  guard_ = std::make_unique<compat::AutocastGuard>(device.type(), true, c10::ScalarType::BFloat16);
}

AutocastScope::~AutocastScope() = default;

}  // namespace spade::trainer
