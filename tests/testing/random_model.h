// Test fixture: a small random decoder of a given family (llama / qwen2 / qwen3) whose distributions
// are peaked enough (init std 0.3) that greedy paths are well separated. Sets 2 intra-op threads
// (LibTorch defaults to 1).
#pragma once
#include <ATen/Parallel.h>

#include <string>

#include "policy/transformer.h"

namespace spade::fixtures {

inline policy::Transformer random_model(const std::string& type = "qwen3") {
  at::set_num_threads(2);
  policy::ModelConfig c;
  c.model_type = type;
  c.vocab_size = 37; c.hidden_size = 32; c.intermediate_size = 48; c.num_hidden_layers = 2;
  c.num_attention_heads = 4; c.num_key_value_heads = 2; c.head_dim = 8; c.rope_theta = 10000;
  c.qk_norm = type == "qwen3"; c.attention_bias = type == "qwen2"; c.tie_word_embeddings = true;
  policy::Transformer m(c);
  m->init_weights(11, 0.3);
  return m;
}

}  // namespace spade::fixtures
