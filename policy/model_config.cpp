#include "policy/model_config.h"

#include <algorithm>

#include "common/error.h"

namespace spade::policy {
namespace {

using nlohmann::json;

[[noreturn]] void fail(const std::string& where, const std::string& msg) {
  throw spade::Error(where + ": " + msg);
}

const json& require(const json& j, const char* key, const std::string& where) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null())
    fail(where, std::string("missing required key '") + key + "'");
  return *it;
}

int64_t get_int(const json& v, const char* key, const std::string& where) {
  if (!v.is_number_integer() && !v.is_number_unsigned())
    fail(where, std::string("key '") + key + "' must be an integer, got " + v.dump());
  return v.get<int64_t>();
}

double get_double(const json& v, const char* key, const std::string& where) {
  if (!v.is_number()) fail(where, std::string("key '") + key + "' must be a number, got " + v.dump());
  return v.get<double>();
}

int64_t req_int(const json& j, const char* key, const std::string& where) {
  return get_int(require(j, key, where), key, where);
}

template <typename T, typename F>
T opt(const json& j, const char* key, T dflt, F conv) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return dflt;
  return conv(*it);
}

RopeScaling parse_rope(const json& r, const std::string& where, const char* key) {
  RopeScaling s;
  if (!r.is_object()) fail(where, std::string("key '") + key + "' must be an object");
  std::string type = "default";
  if (r.contains("rope_type")) type = r.at("rope_type").get<std::string>();
  else if (r.contains("type")) type = r.at("type").get<std::string>();
  s.rope_type = type;
  if (type == "default") return s;
  if (type != "llama3")
    fail(where, std::string("key '") + key + ".rope_type' = '" + type +
                    "' is not supported (supported: default, llama3)");
  auto num = [&](const char* k) { return get_double(require(r, k, where), k, where); };
  s.factor = num("factor");
  s.low_freq_factor = num("low_freq_factor");
  s.high_freq_factor = num("high_freq_factor");
  s.original_max_position_embeddings = req_int(r, "original_max_position_embeddings", where);
  return s;
}

}  // namespace

std::string architecture_for(const std::string& model_type) {
  if (model_type == "llama") return "LlamaForCausalLM";
  if (model_type == "qwen2") return "Qwen2ForCausalLM";
  if (model_type == "qwen3") return "Qwen3ForCausalLM";
  if (model_type == "qwen3_moe") return "Qwen3MoeForCausalLM";
  throw spade::Error("unknown model_type '" + model_type + "' (supported: llama, qwen2, qwen3, qwen3_moe)");
}

bool ModelConfig::is_moe_layer(int64_t i) const {
  if (num_experts <= 0) return false;
  if (std::find(mlp_only_layers.begin(), mlp_only_layers.end(), i) != mlp_only_layers.end()) return false;
  return decoder_sparse_step > 0 && (i + 1) % decoder_sparse_step == 0;
}

void ModelConfig::validate(const std::string& where) const {
  if (model_type != "llama" && model_type != "qwen2" && model_type != "qwen3" && model_type != "qwen3_moe")
    fail(where, "unknown model_type '" + model_type + "' (supported: llama, qwen2, qwen3, qwen3_moe)");
  auto pos = [&](int64_t v, const char* k) {
    if (v <= 0) fail(where, std::string("key '") + k + "' must be positive, got " + std::to_string(v));
  };
  pos(vocab_size, "vocab_size");
  pos(hidden_size, "hidden_size");
  pos(intermediate_size, "intermediate_size");
  pos(num_hidden_layers, "num_hidden_layers");
  pos(num_attention_heads, "num_attention_heads");
  if (kv_heads() <= 0 || num_attention_heads % kv_heads() != 0)
    fail(where, "num_attention_heads (" + std::to_string(num_attention_heads) +
                    ") must be a multiple of num_key_value_heads (" + std::to_string(kv_heads()) + ")");
  if (head_dim == 0 && hidden_size % num_attention_heads != 0)
    fail(where, "hidden_size is not divisible by num_attention_heads; set head_dim explicitly");
  if (head_size() <= 0 || head_size() % 2 != 0)
    fail(where, "head_dim must be positive and even (RoPE rotates pairs), got " +
                    std::to_string(head_size()));
  if (!(rms_norm_eps > 0)) fail(where, "rms_norm_eps must be positive");
  if (!(rope_theta > 0)) fail(where, "rope_theta must be positive");
  if (torch_dtype != "float32" && torch_dtype != "bfloat16" && torch_dtype != "float16")
    fail(where, "torch_dtype '" + torch_dtype + "' is not supported (float32, bfloat16, float16)");
  if (qk_norm && model_type != "qwen3" && model_type != "qwen3_moe")
    fail(where, "qk_norm is only part of the qwen3 architectures");
  if (model_type == "qwen3_moe") {
    pos(num_experts, "num_experts");
    pos(moe_intermediate_size, "moe_intermediate_size");
    pos(decoder_sparse_step, "decoder_sparse_step");
    if (num_experts_per_tok <= 0 || num_experts_per_tok > num_experts)
      fail(where, "num_experts_per_tok must be in [1, num_experts = " + std::to_string(num_experts) + "], got " +
                      std::to_string(num_experts_per_tok));
  } else if (num_experts != 0) {
    fail(where, "num_experts is only part of the qwen3_moe architecture");
  }
}

ModelConfig ModelConfig::from_json(const json& j, const std::string& where) {
  if (!j.is_object()) fail(where, "config must be a JSON object");
  ModelConfig c;
  c.model_type = require(j, "model_type", where).get<std::string>();
  if (c.model_type != "llama" && c.model_type != "qwen2" && c.model_type != "qwen3" && c.model_type != "qwen3_moe")
    fail(where, "key 'model_type' = '" + c.model_type + "' is not supported (llama, qwen2, qwen3, qwen3_moe)");
  c.vocab_size = req_int(j, "vocab_size", where);
  c.hidden_size = req_int(j, "hidden_size", where);
  c.intermediate_size = req_int(j, "intermediate_size", where);
  c.num_hidden_layers = req_int(j, "num_hidden_layers", where);
  c.num_attention_heads = req_int(j, "num_attention_heads", where);
  c.num_key_value_heads = opt<int64_t>(j, "num_key_value_heads", c.num_attention_heads,
                                       [&](const json& v) { return get_int(v, "num_key_value_heads", where); });
  // Qwen3 sets head_dim explicitly (it is not hidden/heads there): never derive it when present.
  c.head_dim = opt<int64_t>(j, "head_dim", c.hidden_size / std::max<int64_t>(1, c.num_attention_heads),
                            [&](const json& v) { return get_int(v, "head_dim", where); });
  c.rms_norm_eps = get_double(require(j, "rms_norm_eps", where), "rms_norm_eps", where);

  // rope_theta: top level (classic) or rope_parameters.rope_theta (transformers >= 4.56). Never guessed.
  const json* rope_params = nullptr;
  if (j.contains("rope_parameters") && !j.at("rope_parameters").is_null()) rope_params = &j.at("rope_parameters");
  if (j.contains("rope_theta") && !j.at("rope_theta").is_null()) {
    c.rope_theta = get_double(j.at("rope_theta"), "rope_theta", where);
  } else if (rope_params && rope_params->is_object() && rope_params->contains("rope_theta")) {
    c.rope_theta = get_double(rope_params->at("rope_theta"), "rope_parameters.rope_theta", where);
  } else {
    fail(where, "missing 'rope_theta' (nor 'rope_parameters.rope_theta'); refusing to guess the RoPE base "
                "(llama 2: 10000, llama 3: 500000, qwen: 1000000)");
  }
  if (j.contains("rope_scaling") && !j.at("rope_scaling").is_null())
    c.rope_scaling = parse_rope(j.at("rope_scaling"), where, "rope_scaling");
  else if (rope_params)
    c.rope_scaling = parse_rope(*rope_params, where, "rope_parameters");

  c.max_position_embeddings = opt<int64_t>(j, "max_position_embeddings", 2048, [&](const json& v) {
    return get_int(v, "max_position_embeddings", where);
  });
  c.tie_word_embeddings = opt<bool>(j, "tie_word_embeddings", false, [&](const json& v) {
    if (!v.is_boolean()) fail(where, "key 'tie_word_embeddings' must be a boolean");
    return v.get<bool>();
  });
  // Qwen2 has q/k/v biases without a flag (trainer-anchors §6).
  c.attention_bias = c.model_type == "qwen2" ||
                     opt<bool>(j, "attention_bias", false, [&](const json& v) { return v.get<bool>(); });
  c.qk_norm = c.model_type == "qwen3" || c.model_type == "qwen3_moe";
  if (c.model_type == "qwen3_moe") {
    // transformers >= 5 writes Qwen3MoeConfig.num_experts as 'num_local_experts' (its attribute_map;
    // config.json of transformers 5.17 on the H200 image, bench/RESULTS.md); either name, not both.
    const bool has_local = j.contains("num_local_experts") && !j.at("num_local_experts").is_null();
    if (has_local && j.contains("num_experts") && !j.at("num_experts").is_null() &&
        j.at("num_experts") != j.at("num_local_experts"))
      fail(where, "'num_experts' and 'num_local_experts' disagree (" + j.at("num_experts").dump() + " vs " +
                      j.at("num_local_experts").dump() + ")");
    c.num_experts = has_local && !j.contains("num_experts") ? req_int(j, "num_local_experts", where)
                                                             : req_int(j, "num_experts", where);
    c.num_experts_per_tok = req_int(j, "num_experts_per_tok", where);
    c.moe_intermediate_size = req_int(j, "moe_intermediate_size", where);
    c.norm_topk_prob = opt<bool>(j, "norm_topk_prob", false, [&](const json& v) {
      if (!v.is_boolean()) fail(where, "key 'norm_topk_prob' must be a boolean");
      return v.get<bool>();
    });
    c.decoder_sparse_step = opt<int64_t>(j, "decoder_sparse_step", 1, [&](const json& v) {
      return get_int(v, "decoder_sparse_step", where);
    });
    if (j.contains("mlp_only_layers") && !j.at("mlp_only_layers").is_null()) {
      if (!j.at("mlp_only_layers").is_array()) fail(where, "key 'mlp_only_layers' must be a list of layer indices");
      for (const auto& x : j.at("mlp_only_layers")) c.mlp_only_layers.push_back(get_int(x, "mlp_only_layers[]", where));
    }
  }
  c.bos_token_id = opt<int64_t>(j, "bos_token_id", -1, [&](const json& v) { return get_int(v, "bos_token_id", where); });
  if (j.contains("eos_token_id") && !j.at("eos_token_id").is_null()) {
    const json& e = j.at("eos_token_id");
    if (e.is_array()) {
      for (const auto& x : e) c.eos_token_ids.push_back(get_int(x, "eos_token_id[]", where));
    } else {
      c.eos_token_ids.push_back(get_int(e, "eos_token_id", where));
    }
  }
  c.torch_dtype = opt<std::string>(j, "torch_dtype", "float32", [](const json& v) { return v.get<std::string>(); });
  if (j.contains("dtype") && j.at("dtype").is_string()) c.torch_dtype = j.at("dtype").get<std::string>();

  // Features this implementation does not have: refuse rather than silently compute something else.
  std::string act = opt<std::string>(j, "hidden_act", "silu", [](const json& v) { return v.get<std::string>(); });
  if (act != "silu") fail(where, "key 'hidden_act' = '" + act + "' is not supported (only silu / SwiGLU)");
  if (opt<bool>(j, "mlp_bias", false, [](const json& v) { return v.get<bool>(); }))
    fail(where, "key 'mlp_bias' = true is not supported");
  if (opt<bool>(j, "use_sliding_window", false, [](const json& v) { return v.get<bool>(); }))
    fail(where, "key 'use_sliding_window' = true is not supported (full attention only)");
  c.validate(where);
  return c;
}

void ModelConfig::merge_generation_config(const json& j, const std::string& where) {
  if (!j.is_object()) fail(where, "generation config must be a JSON object");
  if (j.contains("eos_token_id") && !j.at("eos_token_id").is_null()) {
    const json& e = j.at("eos_token_id");
    std::vector<int64_t> ids;
    if (e.is_array()) {
      for (const auto& x : e) ids.push_back(get_int(x, "eos_token_id[]", where));
    } else {
      ids.push_back(get_int(e, "eos_token_id", where));
    }
    for (int64_t id : ids)
      if (std::find(eos_token_ids.begin(), eos_token_ids.end(), id) == eos_token_ids.end()) eos_token_ids.push_back(id);
  }
  if (j.contains("bos_token_id") && !j.at("bos_token_id").is_null())
    bos_token_id = get_int(j.at("bos_token_id"), "bos_token_id", where);
}

json ModelConfig::to_json() const {
  validate("ModelConfig::to_json");
  json j;
  j["architectures"] = json::array({architecture_for(model_type)});
  j["model_type"] = model_type;
  j["vocab_size"] = vocab_size;
  j["hidden_size"] = hidden_size;
  j["intermediate_size"] = intermediate_size;
  j["num_hidden_layers"] = num_hidden_layers;
  j["num_attention_heads"] = num_attention_heads;
  j["num_key_value_heads"] = kv_heads();
  j["head_dim"] = head_size();
  j["hidden_act"] = "silu";
  j["rms_norm_eps"] = rms_norm_eps;
  j["rope_theta"] = rope_theta;
  if (rope_scaling.rope_type == "default") {
    j["rope_scaling"] = nullptr;
  } else {
    j["rope_scaling"] = {{"rope_type", rope_scaling.rope_type},
                         {"factor", rope_scaling.factor},
                         {"low_freq_factor", rope_scaling.low_freq_factor},
                         {"high_freq_factor", rope_scaling.high_freq_factor},
                         {"original_max_position_embeddings", rope_scaling.original_max_position_embeddings}};
  }
  j["max_position_embeddings"] = max_position_embeddings;
  j["tie_word_embeddings"] = tie_word_embeddings;
  if (model_type != "qwen2") j["attention_bias"] = attention_bias;
  if (model_type == "llama") j["mlp_bias"] = false;
  if (model_type != "llama") j["use_sliding_window"] = false;
  j["attention_dropout"] = 0.0;
  j["initializer_range"] = 0.02;
  j["use_cache"] = true;
  if (bos_token_id >= 0) j["bos_token_id"] = bos_token_id;
  if (eos_token_ids.size() == 1) j["eos_token_id"] = eos_token_ids[0];
  else if (!eos_token_ids.empty()) j["eos_token_id"] = eos_token_ids;
  j["torch_dtype"] = torch_dtype;
  if (model_type == "qwen3_moe") {
    j["num_experts"] = num_experts;
    j["num_experts_per_tok"] = num_experts_per_tok;
    j["moe_intermediate_size"] = moe_intermediate_size;
    j["norm_topk_prob"] = norm_topk_prob;
    j["decoder_sparse_step"] = decoder_sparse_step;
    j["mlp_only_layers"] = mlp_only_layers;
    j["output_router_logits"] = false;
  }
  return j;
}

int64_t ModelConfig::layer_parameters(int64_t i) const {
  const int64_t h = hidden_size, d = head_size(), nh = num_attention_heads, kv = kv_heads();
  int64_t attn = h * nh * d + 2 * h * kv * d + nh * d * h;
  if (attention_bias) attn += nh * d + 2 * kv * d;
  if (o_proj_bias()) attn += h;
  if (qk_norm) attn += 2 * d;
  const int64_t mlp = is_moe_layer(i) ? num_experts * h + num_experts * 3 * h * moe_intermediate_size
                                      : 3 * h * intermediate_size;
  return attn + mlp + 2 * h;
}

int64_t ModelConfig::root_parameters() const {
  return vocab_size * hidden_size * (tie_word_embeddings ? 1 : 2) + hidden_size;
}

int64_t ModelConfig::num_parameters() const {
  int64_t total = root_parameters();
  for (int64_t i = 0; i < num_hidden_layers; ++i) total += layer_parameters(i);
  return total;
}

}  // namespace spade::policy
