#include "apps/version.h"

#include <torch/cuda.h>
#include <torch/version.h>

// Set for this file by apps/CMakeLists.txt.
#ifndef SPADE_VERSION
#error "SPADE_VERSION (CMake's PROJECT_VERSION) must be defined"
#endif

namespace spade::apps {

std::string version_text() {
  std::string text = std::string("spade ") + SPADE_VERSION + "\nLibTorch " + TORCH_VERSION;
#if SPADE_WITH_CUDA
  const size_t gpus = torch::cuda::device_count();
  text += std::string(" with CUDA") + (sizeof(SPADE_CUDA_VERSION) > 1 ? " " SPADE_CUDA_VERSION : "") + "; " +
          std::to_string(gpus) + (gpus == 1 ? " GPU" : " GPUs") + " visible";
#else
  text += ", CPU only (built without CUDA)";
#endif
  return text;
}

}  // namespace spade::apps
