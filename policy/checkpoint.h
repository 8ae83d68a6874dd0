// HF-layout checkpoints of a Transformer: config.json, generation_config.json, model.safetensors
// (or shards model-0000I-of-0000N.safetensors + model.safetensors.index.json above a size threshold),
// tokenizer.model or tokenizer.json (+ tokenizer_config.json).
// Loadable by transformers (AutoModelForCausalLM.from_pretrained) and by load_checkpoint().
// Not thread-safe with respect to concurrent writers of the same directory.
#pragma once

#include <c10/core/ScalarType.h>

#include <cstdint>
#include <string>

#include "policy/transformer.h"

#include "policy/sampling_defaults.h"

namespace spade::policy {

/// Default shard threshold: PreTrainedModel.save_pretrained's max_shard_size default "5GB" in current
/// transformers (older 4.x releases used "10GB"), which huggingface_hub's serialization helpers
/// (MAX_SHARD_SIZE = "5GB") parse with decimal units, GB = 10^9 bytes.
inline constexpr uint64_t kDefaultMaxShardSize = 5'000'000'000ULL;

/// The checkpoint dtype names of the config (checkpoint.dtype) and the CLI (--dtype) -> the
/// safetensors dtype: "fp32" -> "float32", "bf16" -> "bfloat16". Throws spade::Error naming `name`
/// and the two names otherwise.
std::string checkpoint_dtype(const std::string& name);

struct CheckpointSaveOptions {
  /// Tensor dtype in model.safetensors: "float32" (exact) or "bfloat16" (the HF export default).
  std::string dtype = "float32";
  /// Tokenizer file to ship with the checkpoint (Tokenizer::model_path()); empty = no tokenizer files.
  /// It is copied to DIR/tokenizer.model (SentencePiece) or DIR/tokenizer.json (a "*.json", HF
  /// tokenizer.json) together with the tokenizer_config.json and special_tokens_map.json found beside
  /// it, unchanged (a Llama 2 / Mistral / Qwen checkpoint keeps its chat template). A SentencePiece
  /// model with no tokenizer_config.json beside it (spade's own tiny tokenizers) gets one written:
  /// ChatML template and our special tokens.
  std::string tokenizer_model;
  /// Largest weight file in bytes of tensor data (transformers' max_shard_size). When all tensors fit,
  /// one model.safetensors is written; otherwise shards, split as huggingface_hub's
  /// split_torch_state_dict_into_shards does: tensors in name order, a new shard whenever the next
  /// tensor would take the current one past the limit, a tensor larger than the limit alone in its own
  /// shard (tensors are never split); files model-00001-of-0000N.safetensors (5 digits) and
  /// model.safetensors.index.json {"metadata": {"total_size": bytes of all tensors},
  /// "weight_map": {tensor: file}}. Must be positive.
  uint64_t max_shard_size = kDefaultMaxShardSize;
  /// Written to generation_config.json (SPADE reference §5 sampling defaults).
  double temperature = sampling_defaults::kTemperature, top_p = sampling_defaults::kTopP;
  int top_k = sampling_defaults::kTopK;
};

/// Saves `model` to `dir` atomically: everything (weights, sharded per options.max_shard_size, then
/// the index) is written to the fresh directory `dir`.tmp, then published with rename, replacing an
/// existing `dir` whole, so no stale model.safetensors or shard of an earlier save survives next to
/// the new files. Tied embeddings are stored once (no lm_head.weight). Every safetensors file carries
/// __metadata__ {"format": "pt"}. Throws spade::Error on I/O failure, an unsupported dtype or a zero
/// max_shard_size.
void save_checkpoint(const std::string& dir, Transformer& model, const CheckpointSaveOptions& options = {});

/// Loads `dir` (config.json + model.safetensors, or model.safetensors.index.json shards) into a new
/// CPU model whose parameters have `dtype` (default float32 for CPU training; values converted).
/// Qwen2-style q/k/v biases are loaded when present. A tied checkpoint's redundant lm_head.weight and
/// legacy rotary_emb.inv_freq buffers are ignored.
/// Throws spade::Error naming the file and tensor for: missing config or weights, bad config
/// (unknown model_type, missing key), a missing tensor, an unexpected tensor, a shape mismatch.
Transformer load_checkpoint(const std::string& dir, c10::ScalarType dtype = c10::ScalarType::Float);

/// Reads and parses DIR/config.json, then merges DIR/generation_config.json when it exists
/// (ModelConfig::merge_generation_config: its eos ids are added, as transformers' generate() stops on
/// them). Errors (missing or invalid config.json, malformed generation_config.json, a bad key) are
/// spade::Error naming the file and key.
ModelConfig load_model_config(const std::string& dir);

}  // namespace spade::policy
