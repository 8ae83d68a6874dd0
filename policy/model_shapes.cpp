#include "policy/model_shapes.h"

#include "common/error.h"

namespace spade::policy {
namespace {

// What the Qwen3 family shares (both Hugging Face configs): qwen3 layers with q/k RMSNorm, tied
// embeddings, rope_theta 1e6, rms_norm_eps 1e-6.
ModelConfig qwen3_family(int64_t vocab, int64_t hidden, int64_t intermediate, int64_t layers, int64_t heads,
                         int64_t kv_heads, int64_t head_dim, int64_t max_positions) {
  ModelConfig c;
  c.model_type = "qwen3";
  c.qk_norm = true;
  c.tie_word_embeddings = true;
  c.rope_theta = 1e6;
  c.rms_norm_eps = 1e-6;
  c.vocab_size = vocab;
  c.hidden_size = hidden;
  c.intermediate_size = intermediate;
  c.num_hidden_layers = layers;
  c.num_attention_heads = heads;
  c.num_key_value_heads = kv_heads;
  c.head_dim = head_dim;
  c.max_position_embeddings = max_positions;
  return c;
}

}  // namespace

ModelConfig qwen3_0_6b_shape() {
  ModelConfig c = qwen3_family(151936, 1024, 3072, 28, 16, 8, 128, 40960);
  c.validate("qwen3_0_6b_shape");
  return c;
}

ModelConfig qwen3_4b_shape() {
  ModelConfig c = qwen3_family(151936, 2560, 9728, 36, 32, 8, 128, 40960);
  c.validate("qwen3_4b_shape");
  return c;
}

ModelConfig qwen3_8b_shape() {
  ModelConfig c = qwen3_family(151936, 4096, 12288, 36, 32, 8, 128, 40960);
  c.tie_word_embeddings = false;
  c.validate("qwen3_8b_shape");
  return c;
}

ModelConfig qwen3_30b_a3b_shape() {
  ModelConfig c = qwen3_family(151936, 2048, 6144, 48, 32, 4, 128, 40960);
  c.model_type = "qwen3_moe";
  c.tie_word_embeddings = false;
  c.num_experts = 128;
  c.num_experts_per_tok = 8;
  c.moe_intermediate_size = 768;
  c.norm_topk_prob = true;
  c.validate("qwen3_30b_a3b_shape");
  return c;
}

ModelConfig named_model_shape(const std::string& name) {
  if (name == "tiny") return qwen3_family(4096, 256, 512, 4, 4, 2, 64, 4096);
  if (name == "100m") return qwen3_family(32000, 768, 2048, 12, 12, 4, 64, 4096);
  if (name == "qwen3-0.6b") return qwen3_0_6b_shape();
  if (name == "qwen3-4b") return qwen3_4b_shape();
  std::string known;
  for (const std::string& n : model_shape_names()) known += (known.empty() ? "" : " | ") + n;
  throw spade::Error("unknown model shape '" + name + "' (known: " + known + ")");
}

const std::vector<std::string>& model_shape_names() {
  static const std::vector<std::string> names = {"tiny", "100m", "qwen3-0.6b", "qwen3-4b"};
  return names;
}

ModelConfig checkpoint_shape(const std::string& name) {
  if (name == "qwen3-0.6b") return qwen3_0_6b_shape();
  if (name == "qwen3-4b") return qwen3_4b_shape();
  if (name == "qwen3-8b") return qwen3_8b_shape();
  if (name == "qwen3-30b-a3b") return qwen3_30b_a3b_shape();
  std::string known;
  for (const std::string& n : checkpoint_shape_names()) known += (known.empty() ? "" : " | ") + n;
  throw spade::Error("unknown checkpoint shape '" + name + "' (known: " + known + ")");
}

const std::vector<std::string>& checkpoint_shape_names() {
  static const std::vector<std::string> names = {"qwen3-0.6b", "qwen3-4b", "qwen3-8b", "qwen3-30b-a3b"};
  return names;
}

}  // namespace spade::policy
