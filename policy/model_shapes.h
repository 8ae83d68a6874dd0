// Named model shapes: the architectures (hyper-parameters only, no weights) that the benchmarks build
// random models of, defined once here for `spade bench sampler` (apps/cmd_bench_sampler.cpp) and
// `spade bench step` (trainer/step_bench.h), and the architectures of the paper's checkpoints that a run
// config names as model.shape (checkpoint_shape: the memory plan of `spade train --dry-run` before the
// checkpoint is downloaded). The Qwen3 shapes are copied from the Hugging Face config.json of
// Qwen/Qwen3-0.6B, Qwen/Qwen3-4B, Qwen/Qwen3-8B and Qwen/Qwen3-30B-A3B; tiny and 100m are our own sizes.
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

/// Qwen3-8B (Hugging Face Qwen/Qwen3-8B config.json): vocab 151936, hidden 4096, intermediate 12288,
/// 36 layers, 32 query / 8 kv heads of head_dim 128, untied embeddings (lm_head.weight of its own), q/k
/// RMSNorm, rope_theta 1e6, rms_norm_eps 1e-6, max_position_embeddings 40960: 8,190,735,360 parameters
/// (6.95B without the two vocab x hidden matrices).
ModelConfig qwen3_8b_shape();

/// Qwen3-30B-A3B (Hugging Face Qwen/Qwen3-30B-A3B config.json, model_type qwen3_moe): vocab 151936,
/// hidden 2048, 48 layers, 32 query / 4 kv heads of head_dim 128, every layer a mixture of 128 SwiGLU
/// experts of moe_intermediate_size 768 with top-8 routing, norm_topk_prob true (decoder_sparse_step 1,
/// no mlp_only_layers; intermediate_size 6144 is in the file but no layer uses a dense MLP), untied
/// embeddings, q/k RMSNorm, rope_theta 1e6, rms_norm_eps 1e-6, max_position_embeddings 40960:
/// 30,532,122,624 parameters (about 3.3B of them active per token).
ModelConfig qwen3_30b_a3b_shape();

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

/// The architecture of a released checkpoint called `name`, one of checkpoint_shape_names():
/// "qwen3-0.6b", "qwen3-4b", "qwen3-8b", "qwen3-30b-a3b" (the functions above). The -Instruct-2507
/// releases the paper trains (Qwen3-4B-Instruct-2507, Qwen3-30B-A3B-Instruct-2507) have the same tensor
/// shapes as these; only rope_theta and max_position_embeddings differ, which change no tensor size.
/// Throws spade::Error naming `name` and the known names otherwise.
ModelConfig checkpoint_shape(const std::string& name);

/// The names checkpoint_shape accepts, smallest first.
const std::vector<std::string>& checkpoint_shape_names();

}  // namespace spade::policy
