#include "trainer/config_model.h"

namespace spade::trainer {

policy::ModelConfig model_config(const ModelConfigYaml& m, int64_t vocab_size, int64_t eos_id, int64_t bos_id) {
  policy::ModelConfig c;
  c.model_type = "llama";
  c.vocab_size = vocab_size;
  c.hidden_size = m.hidden_size;
  c.intermediate_size = m.intermediate_size;
  c.num_hidden_layers = m.num_hidden_layers;
  c.num_attention_heads = m.num_attention_heads;
  c.num_key_value_heads = m.num_key_value_heads;
  c.head_dim = m.hidden_size / m.num_attention_heads;
  c.rms_norm_eps = m.rms_norm_eps;
  c.rope_theta = m.rope_theta;
  c.max_position_embeddings = m.max_position_embeddings;
  c.tie_word_embeddings = m.tie_word_embeddings;
  c.bos_token_id = bos_id;
  c.eos_token_ids = {eos_id};
  c.validate("config model.*");
  return c;
}

}  // namespace spade::trainer
