// Named model shapes: the architectures (hyper-parameters only, no weights) that the benchmarks build
// random models of, defined once here for `spade bench sampler` (apps/cmd_bench_sampler.cpp) and
// `spade bench step` (trainer/step_bench.h). The Qwen3 shapes are copied from the Hugging Face
// config.json of Qwen/Qwen3-0.6B and Qwen/Qwen3-4B; tiny and 100m are our own small sizes.
// Plain functions returning values; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "policy/model_config.h"

namespace spade::policy {

/// Qwen3-0.6B (Hugging Face Qwen/Qwen3-0.6B config.json): vocab 151936, hidden 1024, intermediate 3072,
/// 28 layers, 16 query / 8 kv heads of head_dim 128, tied embeddings, q/k RMSNorm, rope_theta 1e6,
/// rms_norm_eps 1e-6, max_position_embeddings 40960: 596,049,920 parameters (0.44B without the embedding).
ModelConfig qwen3_0_6b_shape();

/// Qwen3-4B (Hugging Face Qwen/Qwen3-4B config.json): vocab 151936, hidden 2560, intermediate 9728,
/// 36 layers, 32 query / 8 kv heads of head_dim 128, tied embeddings, q/k RMSNorm, rope_theta 1e6,
/// rms_norm_eps 1e-6, max_position_embeddings 40960: 4,022,468,096 parameters (3.6B without the embedding).
ModelConfig qwen3_4b_shape();

/// The shape called `name`, one of model_shape_names():
///   "tiny"       qwen3 family, vocab 4096, hidden 256, intermediate 512, 4 layers, 4 / 2 heads of 64:
///                3,410,688 parameters (a fast CPU bench size);
///   "100m"       qwen3 family, vocab 32000, hidden 768, intermediate 2048, 12 layers, 12 / 4 heads of 64:
///                100,094,208 parameters (GPT-2-small-like widths with GQA);
///   "qwen3-0.6b" qwen3_0_6b_shape();  "qwen3-4b" qwen3_4b_shape().
/// tiny and 100m: tied embeddings, q/k RMSNorm, rope_theta 1e6, rms_norm_eps 1e-6 (Qwen3's values),
/// max_position_embeddings 4096. Throws spade::Error naming `name` and the known names otherwise.
ModelConfig named_model_shape(const std::string& name);

/// The names named_model_shape accepts, smallest first.
const std::vector<std::string>& model_shape_names();

}  // namespace spade::policy
