// `spade --version`: what this binary is and what it was built with.
#pragma once
#include <string>

namespace spade::apps {

/// Two lines, no trailing newline:
///   "spade 0.1.0"                                   (CMake's project(VERSION))
///   "LibTorch 1.13.0, CPU only (built without CUDA)"  or
///   "LibTorch 2.6.0 with CUDA 12.4; 1 GPU visible"  (the LibTorch headers' TORCH_VERSION; CUDA is
///                                                    compiled in when CMake found LibTorch's CUDA libraries)
std::string version_text();

}  // namespace spade::apps
