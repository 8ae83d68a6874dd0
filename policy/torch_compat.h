// torch_compat.h: every difference between the LibTorch versions spade builds against, in one place.
//
// Supported: Debian's LibTorch 1.13 (CPU; the default build) and PyTorch 2.x LibTorch (CPU/CUDA builds).
// Code elsewhere in the project must not test TORCH_VERSION_* itself: add a helper here instead.
// Header-only. Includes <ATen/autocast_mode.h> (which pulls in ATen.h) for the autocast helpers.
#pragma once

#include <ATen/Functions.h>
#include <ATen/autocast_mode.h>
#include <ATen/core/Tensor.h>
#include <c10/core/DeviceType.h>
#include <c10/core/ScalarType.h>
#include <torch/version.h>

#include <cstdint>

/// True when the LibTorch in use is at least MAJOR.MINOR.
#define SPADE_TORCH_AT_LEAST(MAJOR, MINOR) \
  (TORCH_VERSION_MAJOR > (MAJOR) || (TORCH_VERSION_MAJOR == (MAJOR) && TORCH_VERSION_MINOR >= (MINOR)))

namespace spade::compat {

/// "1.13.0" etc.: the LibTorch version compiled against (for logs and benchmark records).
inline const char* torch_version() { return TORCH_VERSION; }

/// Read-only raw pointer of a tensor's data. PyTorch >= 2.1 has const_data_ptr(); 1.13 only data_ptr().
inline const void* const_data(const at::Tensor& t) {
#if SPADE_TORCH_AT_LEAST(2, 1)
  return t.const_data_ptr();
#else
  return t.data_ptr();
#endif
}

/// Causal scaled dot-product attention, softmax(q k^T / sqrt(d) + causal mask) v, with query i seeing
/// keys 0..i: q, k, v [B, H, T, d] of one dtype (same H: callers expand grouped K/V first), returns
/// [B, H, T, d] in that dtype; differentiable. PyTorch >= 2.0: at::scaled_dot_product_attention(q, k,
/// v, None, 0, is_causal=true), which picks FlashAttention-2 / memory-efficient kernels on CUDA (no
/// [T, T] score matrix in memory) and the math kernel elsewhere; 1.13: the then-private
/// at::_scaled_dot_product_attention(..., need_attn_weights=false, is_causal=true), math kernel only.
/// Throws c10::Error on mismatched shapes or dtypes.
inline at::Tensor causal_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v) {
#if SPADE_TORCH_AT_LEAST(2, 0)
  return at::scaled_dot_product_attention(q, k, v, {}, 0.0, /*is_causal=*/true);
#else
  return std::get<0>(at::_scaled_dot_product_attention(q, k, v, {}, 0.0, /*need_attn_weights=*/false,
                                                       /*is_causal=*/true));
#endif
}

/// Element size in bytes of a scalar type. c10::elementSize exists in both versions; 2.x also offers
/// c10::elementSize via <c10/core/ScalarType.h> (same header), kept here so callers have one spelling.
inline int64_t element_size(c10::ScalarType t) { return static_cast<int64_t>(c10::elementSize(t)); }

// ---- Autocast (torch.autocast) state, per device type, thread-local. -------------------------------
// LibTorch 1.13 .. 2.3: at::autocast::{is_enabled, set_enabled, get/set_autocast_gpu_dtype} for CUDA and
// {is_cpu_enabled, set_cpu_enabled, get/set_autocast_cpu_dtype} for CPU. PyTorch >= 2.4 takes the device
// type instead ({is,set}_autocast_enabled(DeviceType, ...), {get,set}_autocast_dtype(DeviceType, ...))
// and deprecates the old spellings. Only CPU and CUDA are supported here (c10::Error otherwise).
// increment_nesting / decrement_nesting / clear_cache are spelled the same in both.

/// Whether autocast is on for `device` (kCPU or kCUDA) in this thread.
inline bool autocast_enabled(c10::DeviceType device) {
  TORCH_CHECK(device == c10::DeviceType::CPU || device == c10::DeviceType::CUDA,
              "spade::compat::autocast_enabled: CPU or CUDA only, got ", device);
#if SPADE_TORCH_AT_LEAST(2, 4)
  return at::autocast::is_autocast_enabled(device);
#else
  return device == c10::DeviceType::CUDA ? at::autocast::is_enabled() : at::autocast::is_cpu_enabled();
#endif
}

/// Turns autocast on or off for `device` (kCPU or kCUDA) in this thread.
inline void set_autocast_enabled(c10::DeviceType device, bool enabled) {
  TORCH_CHECK(device == c10::DeviceType::CPU || device == c10::DeviceType::CUDA,
              "spade::compat::set_autocast_enabled: CPU or CUDA only, got ", device);
#if SPADE_TORCH_AT_LEAST(2, 4)
  at::autocast::set_autocast_enabled(device, enabled);
#else
  if (device == c10::DeviceType::CUDA) at::autocast::set_enabled(enabled);
  else at::autocast::set_cpu_enabled(enabled);
#endif
}

/// The lower-precision dtype autocast uses on `device` (defaults: CUDA float16, CPU bfloat16).
inline c10::ScalarType autocast_dtype(c10::DeviceType device) {
  TORCH_CHECK(device == c10::DeviceType::CPU || device == c10::DeviceType::CUDA,
              "spade::compat::autocast_dtype: CPU or CUDA only, got ", device);
#if SPADE_TORCH_AT_LEAST(2, 4)
  return at::autocast::get_autocast_dtype(device);
#else
  return device == c10::DeviceType::CUDA ? at::autocast::get_autocast_gpu_dtype()
                                         : at::autocast::get_autocast_cpu_dtype();
#endif
}

/// Sets the lower-precision dtype autocast uses on `device` (kCPU or kCUDA) in this thread.
inline void set_autocast_dtype(c10::DeviceType device, c10::ScalarType dtype) {
  TORCH_CHECK(device == c10::DeviceType::CPU || device == c10::DeviceType::CUDA,
              "spade::compat::set_autocast_dtype: CPU or CUDA only, got ", device);
#if SPADE_TORCH_AT_LEAST(2, 4)
  at::autocast::set_autocast_dtype(device, dtype);
#else
  if (device == c10::DeviceType::CUDA) at::autocast::set_autocast_gpu_dtype(dtype);
  else at::autocast::set_autocast_cpu_dtype(dtype);
#endif
}

/// RAII: sets autocast on `device` (kCPU or kCUDA) in this thread to (`enabled`, `dtype`) for the
/// guard's life, as `with torch.autocast(device, dtype, enabled):` does: nesting counted, and when the
/// outermost autocast region closes its cache of low-precision weight copies is cleared (so an
/// optimizer step never reads stale copies); the previous state is restored on exit, also when an
/// exception unwinds.
class AutocastGuard {
 public:
  AutocastGuard(c10::DeviceType device, bool enabled, c10::ScalarType dtype)
      : device_(device), prev_enabled_(autocast_enabled(device)), prev_dtype_(autocast_dtype(device)) {
    set_autocast_enabled(device, enabled);
    set_autocast_dtype(device, dtype);
    at::autocast::increment_nesting();
  }
  ~AutocastGuard() {
    if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
    set_autocast_enabled(device_, prev_enabled_);
    set_autocast_dtype(device_, prev_dtype_);
  }
  AutocastGuard(const AutocastGuard&) = delete;
  AutocastGuard& operator=(const AutocastGuard&) = delete;

 private:
  c10::DeviceType device_;
  bool prev_enabled_;
  c10::ScalarType prev_dtype_;
};

/// Switches the libuv backend of a c10d::TCPStoreOptions off. PyTorch >= 2.4 defaults useLibUV to true
/// (TCPStore.hpp), and a LibTorch built without libuv (Debian 13's 2.6) then refuses every TCPStore:
/// "use_libuv was requested but PyTorch was build without libuv support" (scripts/check_torch2.sh).
/// The classic backend exists in every version; before 2.4 it is the default (1.13 has no such field).
template <class TcpStoreOptions>
inline void use_classic_tcpstore(TcpStoreOptions& options) {
#if SPADE_TORCH_AT_LEAST(2, 4)
  options.useLibUV = false;
#else
  (void)options;
#endif
}

}  // namespace spade::compat
