// bf16 autocast for the trainer's forward passes (config train.autocast; issue 5 "bf16 autocast on
// CUDA"). Mixed precision as torch.autocast does it: the parameters (master weights), their gradients
// and the AdamW state stay float32; inside the scope, matmul-like ops (linear, matmul, bmm, addmm, ...)
// cast their inputs to bfloat16 and return bfloat16, while the ops autocast keeps in float32 (softmax,
// log_softmax, sums, norms) and our explicit .to(kFloat32) in policy/ (RMSNorm, attention softmax)
// stay float32; the output projection's matmul runs in bf16, its logits are cast to float32 before the
// log-softmax (as verl/HF training under autocast does). Backward runs outside the scope; autograd replays each op in its forward dtype.
//
// CPU: LibTorch 1.13's CPU autocast (at::autocast::set_cpu_enabled, bfloat16) casts linear and matmul
// to bf16 as CUDA autocast does (tests/trainer/test_autocast.cpp checks the dtypes, and the forward and
// update against fp32 within bf16 rounding), so train.autocast=bf16 is supported on the CPU too.
// Measured (bench/RESULTS.md, "Activation checkpointing and bf16 autocast"): less peak memory there.
//
// Version differences (1.13 vs 2.x) live in policy/torch_compat.h. Thread safety: autocast state is
// thread-local, so a scope affects only the thread that opened it, and must be closed on that thread.
#pragma once
#include <c10/core/Device.h>
#include <c10/core/ScalarType.h>

#include <memory>
#include <string>

namespace spade::compat {
class AutocastGuard;
}

namespace spade::trainer {

/// train.autocast -> whether bf16 autocast is on: "none" -> false, "bf16" -> true.
/// Throws spade::Error naming train.autocast for any other value.
bool parse_autocast(const std::string& mode);

/// RAII scope: while alive, bf16 autocast is on for `device`'s type (CPU or CUDA) in this thread,
/// exactly as `with torch.autocast(device.type, dtype=torch.bfloat16):` (nesting counted; the cast
/// cache of bf16 weight copies is cleared when the outermost scope closes, so an optimizer step never
/// sees stale copies). `enabled` false: does nothing. The previous state is restored on exit.
/// Throws spade::Error for a device that is neither CPU nor CUDA.
class AutocastScope {
 public:
  AutocastScope(const c10::Device& device, bool enabled);
  ~AutocastScope();
  AutocastScope(const AutocastScope&) = delete;
  AutocastScope& operator=(const AutocastScope&) = delete;

 private:
  std::unique_ptr<compat::AutocastGuard> guard_;  // null when not enabled
};

}  // namespace spade::trainer
