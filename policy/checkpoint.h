// HF-layout checkpoints of a Transformer: config.json, generation_config.json, model.safetensors
// (or shards + model.safetensors.index.json when loading), tokenizer.model or tokenizer.json
// (+ tokenizer_config.json).
// Loadable by transformers (AutoModelForCausalLM.from_pretrained) and by load_checkpoint().
// Not thread-safe with respect to concurrent writers of the same directory.
#pragma once

#include <c10/core/ScalarType.h>

#include <string>

#include "policy/transformer.h"

namespace spade::policy {

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
  /// Written to generation_config.json (SPADE reference §5 sampling defaults).
  double temperature = 0.6, top_p = 0.95;
  int top_k = 20;
};

/// Saves `model` to `dir` atomically: everything is written to `dir`.tmp, then the directory is
/// published with rename (an existing `dir` is replaced). Tied embeddings are stored once
/// (no lm_head.weight). Throws spade::Error on I/O failure or an unsupported dtype.
void save_checkpoint(const std::string& dir, Transformer& model, const CheckpointSaveOptions& options = {});

/// Loads `dir` (config.json + model.safetensors, or model.safetensors.index.json shards) into a new
/// CPU model whose parameters have `dtype` (default float32 for CPU training; values converted).
/// Qwen2-style q/k/v biases are loaded when present. A tied checkpoint's redundant lm_head.weight and
/// legacy rotary_emb.inv_freq buffers are ignored.
/// Throws spade::Error naming the file and tensor for: missing config or weights, bad config
/// (unknown model_type, missing key), a missing tensor, an unexpected tensor, a shape mismatch.
Transformer load_checkpoint(const std::string& dir, c10::ScalarType dtype = c10::ScalarType::Float);

/// Reads and parses DIR/config.json (errors name the file and key).
ModelConfig load_model_config(const std::string& dir);

}  // namespace spade::policy
