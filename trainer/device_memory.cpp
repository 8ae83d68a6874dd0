#include "trainer/device_memory.h"

#include <utility>

#ifdef SPADE_CUDA_ALLOCATOR_STATS
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <cuda_runtime_api.h>
#endif

namespace spade::trainer {

std::optional<DeviceMemoryPeaks> device_memory_peaks(const c10::Device& device) {
#ifdef SPADE_CUDA_ALLOCATOR_STATS
  if (!device.is_cuda()) return std::nullopt;
  const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(device.has_index() ? device.index() : 0);
  // Index 0 of the per-pool arrays is StatType::AGGREGATE (all pools) in LibTorch 1.13 and 2.x alike.
  return DeviceMemoryPeaks{stats.allocated_bytes[0].peak, stats.reserved_bytes[0].peak};
#else
  (void)device;
  return std::nullopt;
#endif
}

void reset_device_memory_peaks(const c10::Device& device) {
#ifdef SPADE_CUDA_ALLOCATOR_STATS
  if (device.is_cuda()) c10::cuda::CUDACachingAllocator::resetPeakStats(device.has_index() ? device.index() : 0);
#else
  (void)device;
#endif
}

namespace {

// cudaMemGetInfo of `device`: {free, total} bytes; nullopt off CUDA or in a build without the allocator stats.
std::optional<std::pair<int64_t, int64_t>> memory_info(const c10::Device& device) {
#ifdef SPADE_CUDA_ALLOCATOR_STATS
  if (!device.is_cuda()) return std::nullopt;
  c10::cuda::CUDAGuard guard(device.has_index() ? device.index() : 0);
  size_t free_bytes = 0, total_bytes = 0;
  C10_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  return std::pair{static_cast<int64_t>(free_bytes), static_cast<int64_t>(total_bytes)};
#else
  (void)device;
  return std::nullopt;
#endif
}

}  // namespace

std::optional<int64_t> device_free_bytes(const c10::Device& device) {
  const auto info = memory_info(device);
  return info ? std::optional<int64_t>(info->first) : std::nullopt;
}

std::optional<int64_t> device_total_bytes(const c10::Device& device) {
  const auto info = memory_info(device);
  return info ? std::optional<int64_t>(info->second) : std::nullopt;
}

}  // namespace spade::trainer
