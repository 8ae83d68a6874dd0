#include "trainer/device.h"

#include <c10/core/impl/DeviceGuardImplInterface.h>

#include <torch/cuda.h>

#include <algorithm>
#include <cctype>

#include "common/error.h"

namespace spade::trainer {

bool valid_device_spec(const std::string& spec) {
  if (spec == "auto" || spec == "cpu" || spec == "cuda") return true;
  if (spec.rfind("cuda:", 0) != 0 || spec.size() == 5 || spec.size() > 9) return false;
  return std::all_of(spec.begin() + 5, spec.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
}

c10::Device resolve_train_device(const std::string& spec, int local_rank, int cuda_devices, int local_world_size) {
  if (!valid_device_spec(spec))
    throw Error("config: train.device must be auto, cpu, cuda or cuda:N (N a GPU index), not '" + spec + "'");
  if (spec == "cpu") return c10::Device(c10::kCPU);
  const int gpus = cuda_devices >= 0 ? cuda_devices : static_cast<int>(torch::cuda::device_count());
  if (spec == "auto" && gpus == 0) return c10::Device(c10::kCPU);
  const int index = spec == "cuda" || spec == "auto" ? local_rank : std::stoi(spec.substr(5));
  if (gpus == 0)
    throw Error("config: train.device is '" + spec + "' but CUDA is not available (this LibTorch was built "
                "without CUDA, or no GPU is visible); use train.device=cpu, or auto to fall back to the CPU");
  if (local_world_size > 1 && spec.rfind("cuda:", 0) == 0 && index != local_rank)
    throw Error("config: train.device '" + spec + "' would put all " + std::to_string(local_world_size) +
                " ranks of this node on GPU " + std::to_string(index) + "; use train.device=cuda or auto "
                "(rank r uses GPU LOCAL_RANK) and choose GPUs with CUDA_VISIBLE_DEVICES");
  if (index < 0 || index >= gpus)
    throw Error("config: train.device '" + spec + "' selects GPU " + std::to_string(index) + " but only " +
                std::to_string(gpus) + " GPU(s) are visible" +
                (spec == "cuda:" + std::to_string(index) ? "" : " (the index is LOCAL_RANK)") +
                "; check CUDA_VISIBLE_DEVICES and --nproc-per-node");
  return c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(index));
}

void make_current(const c10::Device& device) {
  if (device.is_cpu()) return;
  c10::impl::getDeviceGuardImpl(device.type())->setDevice(device);
}

}  // namespace spade::trainer
