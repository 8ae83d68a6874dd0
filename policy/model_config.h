// ModelConfig: the architecture hyper-parameters of a decoder-only policy, mirroring Hugging Face
// config.json for the llama, qwen2, qwen3 and qwen3_moe families (trainer-anchors §6).
// A plain value type; thread-compatible (no shared state).
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace spade::policy {

/// RoPE frequency scaling (config.json "rope_scaling" or "rope_parameters").
/// Supported: "default" (none) and "llama3" (Llama 3.1 frequency-dependent scaling).
struct RopeScaling {
  std::string rope_type = "default";
  double factor = 1.0;                             // llama3: 8
  double low_freq_factor = 1.0;                    // llama3: 1
  double high_freq_factor = 4.0;                   // llama3: 4
  int64_t original_max_position_embeddings = 8192; // llama3: 8192
};

struct ModelConfig {
  std::string model_type = "llama";  // "llama" | "qwen2" | "qwen3" | "qwen3_moe"
  int64_t vocab_size = 0;
  int64_t hidden_size = 0;
  int64_t intermediate_size = 0;
  int64_t num_hidden_layers = 0;
  int64_t num_attention_heads = 0;
  int64_t num_key_value_heads = 0;   // 0 in a hand-built config means "= num_attention_heads"
  int64_t head_dim = 0;              // 0 in a hand-built config means hidden_size / num_attention_heads
  double rms_norm_eps = 1e-6;
  double rope_theta = 10000.0;
  RopeScaling rope_scaling;
  int64_t max_position_embeddings = 2048;
  bool tie_word_embeddings = false;
  /// q/k/v projection biases. Qwen2 always has them (its config has no flag); llama/qwen3 follow
  /// config "attention_bias", which for them also adds an o_proj bias (see o_proj_bias()).
  bool attention_bias = false;
  /// Per-head RMSNorm of q and k before RoPE (Qwen3: self_attn.{q,k}_norm.weight, shape [head_dim]).
  bool qk_norm = false;
  int64_t bos_token_id = -1;               // -1 = none
  std::vector<int64_t> eos_token_ids;      // config "eos_token_id": int or list
  std::string torch_dtype = "float32";     // "float32" | "bfloat16" | "float16"

  // Mixture of experts (qwen3_moe; HF Qwen3MoeSparseMoeBlock). A sparse layer replaces the dense MLP
  // by a router mlp.gate.weight [num_experts, hidden] and experts mlp.experts.{e}.{gate,up,down}_proj
  // ([moe_intermediate_size, hidden] / [hidden, moe_intermediate_size]): probs = softmax(router logits)
  // in fp32, keep the top num_experts_per_tok, renormalise them to sum 1 if norm_topk_prob, and sum
  // the chosen experts' SwiGLU outputs weighted by those probs (cast to the model dtype).
  int64_t num_experts = 0;                 // 0 = dense model
  int64_t num_experts_per_tok = 0;         // router top-k
  int64_t moe_intermediate_size = 0;
  bool norm_topk_prob = false;             // HF Qwen3MoeConfig default false; Qwen3-30B-A3B sets true
  int64_t decoder_sparse_step = 1;         // layer i is sparse iff (i + 1) % step == 0 ...
  std::vector<int64_t> mlp_only_layers;    // ... and i is not listed here (those keep the dense MLP)
  /// Whether layer `i` uses the mixture of experts (HF Qwen3MoeDecoderLayer's rule).
  bool is_moe_layer(int64_t i) const;

  /// num_key_value_heads / head_dim with the defaults above resolved.
  int64_t kv_heads() const { return num_key_value_heads > 0 ? num_key_value_heads : num_attention_heads; }
  int64_t head_size() const { return head_dim > 0 ? head_dim : hidden_size / num_attention_heads; }
  /// HF: LlamaAttention/Qwen3Attention give o_proj a bias iff attention_bias; Qwen2 never does.
  bool o_proj_bias() const { return attention_bias && model_type != "qwen2"; }

  /// Throws spade::Error (prefixed by `where`) if the shape is inconsistent: non-positive sizes,
  /// heads not divisible by kv heads, unknown model_type, odd head_dim (RoPE needs pairs).
  void validate(const std::string& where = "ModelConfig") const;

  /// Parses a config.json object. `where` names the file in errors ("ckpt/config.json: key 'x' ...").
  /// Required: model_type, vocab_size, hidden_size, intermediate_size, num_hidden_layers,
  /// num_attention_heads, rms_norm_eps, and rope_theta (top level, or rope_parameters.rope_theta).
  /// Never guesses theta: a missing theta is an error. Rejects features this model does not implement
  /// (hidden_act other than silu, mlp_bias, sliding-window attention, unknown rope types).
  static ModelConfig from_json(const nlohmann::json& j, const std::string& where);

  /// Merges a generation_config.json object into this config, as transformers' generate() would see
  /// it (it stops on GenerationConfig.eos_token_id, which from_pretrained reads from
  /// generation_config.json, not on config.json's): its "eos_token_id" (int or list) is appended to
  /// eos_token_ids without duplicates, config.json's ids first (real Qwen3 checkpoints: config.json
  /// 151645, generation_config.json [151645, 151643] -> {151645, 151643}); its "bos_token_id", when
  /// present, replaces bos_token_id (generate's value). Other keys (sampling defaults, pad_token_id,
  /// which this config does not hold) are ignored. Throws spade::Error prefixed by `where` when `j` is
  /// not an object or a token id is not an integer.
  void merge_generation_config(const nlohmann::json& j, const std::string& where);

  /// A config.json that transformers can load (architectures = LlamaForCausalLM / Qwen2ForCausalLM /
  /// Qwen3ForCausalLM, hidden_act silu, explicit head_dim and num_key_value_heads).
  nlohmann::json to_json() const;

  /// Number of distinct parameters (tied embeddings counted once): root_parameters() plus every
  /// layer_parameters(i).
  int64_t num_parameters() const;
  /// Parameters of decoder layer i (attention, MLP or MoE block, its two RMSNorms), and of everything
  /// outside the layers (embeddings, final norm, an untied lm_head): the units of parameter sharding.
  int64_t layer_parameters(int64_t i) const;
  int64_t root_parameters() const;
};

/// "LlamaForCausalLM" etc. for a model_type; throws spade::Error for an unknown type.
std::string architecture_for(const std::string& model_type);

}  // namespace spade::policy
