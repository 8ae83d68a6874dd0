#include "policy/checkpoint.h"

#include <torch/torch.h>

#include <filesystem>
#include <map>
#include <set>

#include "common/atomic_file.h"
#include "common/error.h"
#include "policy/safetensors.h"

namespace spade::policy {
namespace fs = std::filesystem;

std::string checkpoint_dtype(const std::string& name) {
  if (name == "fp32") return "float32";
  if (name == "bf16") return "bfloat16";
  throw Error("checkpoint dtype must be fp32 or bf16, not '" + name + "'");
}

// config.json and model.safetensors.index.json are read whole: at most 64 MiB (a 1000-shard index is
// ~100 KB), so that a path to an endless file is an error instead of a hang.
constexpr uint64_t kMaxMetadataBytes = uint64_t{64} << 20;
using nlohmann::json;

ModelConfig load_model_config(const std::string& dir) {
  const std::string path = (fs::path(dir) / "config.json").string();
  if (!fs::exists(path)) throw spade::Error(path + ": missing (not an HF checkpoint directory?)");
  json j;
  try {
    j = json::parse(spade::read_file(path, kMaxMetadataBytes));
  } catch (const json::exception& e) {
    throw spade::Error(path + ": invalid JSON: " + e.what());
  }
  ModelConfig cfg = ModelConfig::from_json(j, path);
  const std::string gen_path = (fs::path(dir) / "generation_config.json").string();
  if (fs::exists(gen_path)) {
    json g;
    try {
      g = json::parse(spade::read_file(gen_path, kMaxMetadataBytes));
    } catch (const json::exception& e) {
      throw spade::Error(gen_path + ": invalid JSON: " + e.what());
    }
    cfg.merge_generation_config(g, gen_path);
  }
  return cfg;
}

Transformer load_checkpoint(const std::string& dir, c10::ScalarType dtype) {
  ModelConfig cfg = load_model_config(dir);

  // Weights: one file, or shards listed by the index's weight_map (tensor name -> shard file).
  std::map<std::string, std::shared_ptr<SafetensorsFile>> files;   // by file name
  std::map<std::string, std::string> where;                        // tensor -> file name
  const fs::path single = fs::path(dir) / "model.safetensors";
  const fs::path index = fs::path(dir) / "model.safetensors.index.json";
  if (fs::exists(single)) {
    auto f = SafetensorsFile::open(single.string());
    files["model.safetensors"] = f;
    for (const auto& n : f->names()) where[n] = "model.safetensors";
  } else if (fs::exists(index)) {
    json j;
    try {
      j = json::parse(spade::read_file(index.string(), kMaxMetadataBytes));
    } catch (const json::exception& e) {
      throw spade::Error(index.string() + ": invalid JSON: " + e.what());
    }
    if (!j.contains("weight_map") || !j["weight_map"].is_object())
      throw spade::Error(index.string() + ": missing object 'weight_map'");
    for (auto it = j["weight_map"].begin(); it != j["weight_map"].end(); ++it) {
      if (!it.value().is_string())
        throw spade::Error(index.string() + ": weight_map entry '" + it.key() + "' must be a file name, got " +
                           it.value().dump());
      const std::string file = it.value().get<std::string>();
      if (!files.count(file)) files[file] = SafetensorsFile::open((fs::path(dir) / file).string());
      if (!files[file]->contains(it.key()))
        throw spade::Error((fs::path(dir) / file).string() + ": tensor '" + it.key() + "' listed in " +
                           index.string() + " is not in the shard");
      where[it.key()] = file;
    }
  } else {
    throw spade::Error(dir + ": no model.safetensors or model.safetensors.index.json");
  }
  auto path_of = [&](const std::string& name) { return (fs::path(dir) / where.at(name)).string(); };

  // Qwen2 (and some llama exports) carry q/k/v biases without a config flag: load any present.
  for (const auto& kv : where)
    if (kv.first.find("self_attn.q_proj.bias") != std::string::npos) cfg.attention_bias = true;

  Transformer model(cfg);
  torch::NoGradGuard no_grad;
  std::set<std::string> used;
  for (auto& p : model->named_parameters(/*recurse=*/true)) {
    const std::string& name = p.key();
    auto it = where.find(name);
    if (it == where.end())
      throw spade::Error(dir + ": tensor '" + name + "' is missing from the checkpoint (model_type " + cfg.model_type +
                         ", " + std::to_string(cfg.num_hidden_layers) + " layers" +
                         (cfg.tie_word_embeddings ? ", tied" : ", untied") + ")");
    at::Tensor t = files.at(it->second)->get(name);
    if (t.sizes() != p.value().sizes()) {
      std::ostringstream msg;
      msg << path_of(name) << ": tensor '" << name << "' has shape " << t.sizes() << " but config.json implies "
          << p.value().sizes();
      throw spade::Error(msg.str());
    }
    p.value().set_data(t.to(dtype).clone());
    used.insert(name);
  }
  for (const auto& kv : where) {
    if (used.count(kv.first)) continue;
    if (cfg.tie_word_embeddings && kv.first == "lm_head.weight") continue;      // redundant copy of the embedding
    if (kv.first.find("rotary_emb.inv_freq") != std::string::npos) continue;    // legacy buffer
    throw spade::Error(path_of(kv.first) + ": unexpected tensor '" + kv.first + "' (not part of a " + cfg.model_type +
                       " model with this config.json)");
  }
  return model;
}

}  // namespace spade::policy
