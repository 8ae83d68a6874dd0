// torch_compat.h: every difference between the LibTorch versions spade builds against, in one place.
//
// Supported: Debian's LibTorch 1.13 (CPU; the default build) and PyTorch 2.x LibTorch (CPU/CUDA builds).
// Code elsewhere in the project must not test TORCH_VERSION_* itself: add a helper here instead.
// Header-only; cheap to include (only <torch/version.h> and ATen core headers).
#pragma once

#include <ATen/core/Tensor.h>
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

/// Element size in bytes of a scalar type. c10::elementSize exists in both versions; 2.x also offers
/// c10::elementSize via <c10/core/ScalarType.h> (same header), kept here so callers have one spelling.
inline int64_t element_size(c10::ScalarType t) { return static_cast<int64_t>(c10::elementSize(t)); }

}  // namespace spade::compat
