// Training device selection (config train.device; issue 5). One definition of what the device
// strings mean, used by `spade train`, the warm start and the GPU step benchmark.
// Thread-safe (pure functions of their arguments and of CUDA's availability).
#pragma once
#include <c10/core/Device.h>

#include <string>

namespace spade::trainer {

/// True when `spec` is a device string train.device accepts: "auto", "cpu", "cuda" or "cuda:N"
/// with N a non-negative decimal integer. Syntax only: says nothing about whether the GPU exists.
bool valid_device_spec(const std::string& spec);

/// The device the policy trains on, from the train.device string `spec`:
///   "cpu"    -> cpu;
///   "cuda"   -> cuda:`local_rank` (each rank of a torchrun/srun job on its own GPU, as
///               distributed.cpp selects it for NCCL: torch DDP's convention);
///   "cuda:N" -> cuda:N (one rank per node only: with several, every rank would share GPU N);
///   "auto"   -> cuda:`local_rank` when at least one GPU is visible, else cpu.
/// `cuda_devices` is the number of visible GPUs (torch::cuda::device_count() by default, -1); tests
/// pass it explicitly. `local_world_size`: ranks on this node (LOCAL_WORLD_SIZE). Throws spade::Error
/// naming train.device when CUDA is requested but this LibTorch has no CUDA or no GPU is visible, when
/// the index is not below the GPU count (also for auto: a rank without a GPU of its own is a launch
/// error, not a reason to train on the CPU), when "cuda:N" is given with local_world_size > 1 and
/// N != local_rank, or when `spec` is not a valid device string.
c10::Device resolve_train_device(const std::string& spec, int local_rank, int cuda_devices = -1,
                                 int local_world_size = 1);

/// Makes `device` the current device of its type (for a GPU: what kernels, cuBLAS handles and the
/// caching allocator use when no device is named), through c10's device-guard registry, so this
/// compiles against CPU-only and CUDA LibTorch alike. No-op for the CPU.
void make_current(const c10::Device& device);

}  // namespace spade::trainer
