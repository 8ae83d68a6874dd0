// GPU memory high-water marks of the trainer (issue 5: "memory high-water marks" in the logs), read
// from PyTorch's CUDA caching allocator: allocated = bytes held by live tensors, reserved = bytes the
// allocator holds from the driver (what must fit on the device; torch.cuda.max_memory_reserved).
// On a LibTorch without CUDA (Debian's) both functions report nothing. Thread-safe as the allocator is.
#pragma once
#include <c10/core/Device.h>

#include <cstdint>
#include <optional>

namespace spade::trainer {

struct DeviceMemoryPeaks {
  int64_t max_allocated_bytes = 0;  // torch.cuda.max_memory_allocated(device) since the last reset
  int64_t max_reserved_bytes = 0;   // torch.cuda.max_memory_reserved(device) since the last reset
};

/// The peaks of `device` since the last reset_device_memory_peaks (or the process start); nullopt
/// when `device` is not a CUDA device or this build has no CUDA. Throws what the allocator throws
/// for a device index that does not exist.
std::optional<DeviceMemoryPeaks> device_memory_peaks(const c10::Device& device);

/// Starts new peaks for `device` (torch.cuda.reset_peak_memory_stats); no-op where the above is nullopt.
void reset_device_memory_peaks(const c10::Device& device);

/// Bytes free on `device` now, as the driver reports them (cudaMemGetInfo, torch.cuda.mem_get_info()[0]):
/// what a new allocation can still get, other processes' use deducted. nullopt when `device` is not a
/// CUDA device or this build has no CUDA. Throws c10::Error for a device index that does not exist.
std::optional<int64_t> device_free_bytes(const c10::Device& device);

/// Total bytes of `device` (cudaMemGetInfo's total, torch.cuda.mem_get_info()[1]): what the dry-run's
/// memory estimate is checked against when a GPU is visible. nullopt as device_free_bytes.
std::optional<int64_t> device_total_bytes(const c10::Device& device);

}  // namespace spade::trainer
