// model.* -> the policy's architecture (policy::ModelConfig) for a randomly initialised Llama-style
// decoder. Torch-free; thread-safe (a pure function).
#pragma once
#include <cstdint>

#include "policy/model_config.h"
#include "trainer/config.h"

namespace spade::trainer {

/// The random-init model of `m` over a vocabulary of `vocab_size` pieces: model_type llama, head size
/// hidden_size / num_attention_heads, the given end-of-sequence and beginning-of-sequence ids (-1: none).
/// Throws spade::Error naming "config model.*" for an inconsistent shape (ModelConfig::validate).
policy::ModelConfig model_config(const ModelConfigYaml& m, int64_t vocab_size, int64_t eos_id, int64_t bos_id);

}  // namespace spade::trainer
