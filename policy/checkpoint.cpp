#include "policy/checkpoint.h"

#include <torch/torch.h>

#include <cstdio>
#include <filesystem>
#include <map>
#include <set>

#include "common/atomic_file.h"
#include "common/error.h"
#include "policy/safetensors.h"
#include "policy/tokenizer.h"

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

namespace {

c10::ScalarType dtype_from_name(const std::string& name) {
  if (name == "float32") return torch::kFloat32;
  if (name == "bfloat16") return torch::kBFloat16;
  if (name == "float16") return torch::kFloat16;
  throw spade::Error("checkpoint dtype '" + name + "' is not supported (float32, bfloat16, float16)");
}

// ChatML in Jinja for transformers' apply_chat_template (same format as policy/chat_template.h).
const char* kChatTemplateJinja =
    "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + "
    "'<|im_end|>' + '\\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

// tokenizer_config.json for spade's own SentencePiece tokenizers: ChatML special tokens and template.
void write_chatml_tokenizer_config(const std::string& tmp) {
  json tc = {{"tokenizer_class", "LlamaTokenizer"}, {"add_bos_token", false}, {"add_eos_token", false},
             {"legacy", false}, {"add_prefix_space", false},
             {"bos_token", "<s>"}, {"eos_token", kImEnd}, {"pad_token", "<pad>"}, {"unk_token", "<unk>"},
             {"additional_special_tokens", {kImStart, kImEnd}}, {"chat_template", kChatTemplateJinja}};
  spade::write_file_atomic((fs::path(tmp) / "tokenizer_config.json").string(), tc.dump(2) + "\n");
}

// Copies `tokenizer` (as `saved_name`) and the tokenizer_config.json / special_tokens_map.json next to
// it into `tmp`, unchanged; true when a tokenizer_config.json was among them.
bool copy_tokenizer_files(const fs::path& tokenizer, const std::string& saved_name, const std::string& tmp) {
  const fs::path src_dir = tokenizer.parent_path();
  const std::vector<std::pair<fs::path, std::string>> files = {
      {tokenizer, saved_name},
      {src_dir / "tokenizer_config.json", "tokenizer_config.json"},
      {src_dir / "special_tokens_map.json", "special_tokens_map.json"}};
  bool has_config = false;
  for (const auto& [from, name] : files) {
    if (name != saved_name && !fs::exists(from)) continue;
    std::error_code ec;
    fs::copy_file(from, fs::path(tmp) / name, fs::copy_options::overwrite_existing, ec);
    if (ec) throw spade::Error(from.string() + ": cannot copy tokenizer file into " + tmp + ": " + ec.message());
    has_config = has_config || name == "tokenizer_config.json";
  }
  return has_config;
}

// Groups tensor names (in name order) into shards of at most `max_bytes` of tensor data each, as
// huggingface_hub's split_state_dict_into_shards_factory does: a new shard when the next tensor would
// take the current one past the limit; a tensor larger than the limit alone in its own shard.
std::vector<std::vector<std::string>> plan_shards(const std::map<std::string, at::Tensor>& tensors,
                                                  uint64_t max_bytes) {
  std::vector<std::vector<std::string>> shards;
  std::vector<std::string> current;
  uint64_t current_bytes = 0;
  for (const auto& [name, t] : tensors) {
    const uint64_t bytes = static_cast<uint64_t>(t.numel()) * t.element_size();
    if (bytes > max_bytes) {
      shards.push_back({name});
      continue;
    }
    if (!current.empty() && current_bytes + bytes > max_bytes) {
      shards.push_back(std::move(current));
      current.clear();
      current_bytes = 0;
    }
    current.push_back(name);
    current_bytes += bytes;
  }
  if (!current.empty()) shards.push_back(std::move(current));
  return shards;
}

// Writes the weights into `tmp`: model.safetensors when they fit in one shard, else
// model-0000I-of-0000N.safetensors and, last, model.safetensors.index.json.
void write_weights(const std::string& tmp, const std::map<std::string, at::Tensor>& tensors, uint64_t max_shard_size) {
  const std::map<std::string, std::string> meta = {{"format", "pt"}};
  const auto shards = plan_shards(tensors, max_shard_size);
  if (shards.size() <= 1) {
    write_safetensors((fs::path(tmp) / "model.safetensors").string(), tensors, meta);
    return;
  }
  json weight_map = json::object();
  uint64_t total = 0;
  for (size_t i = 0; i < shards.size(); ++i) {
    char file[64];
    std::snprintf(file, sizeof(file), "model-%05zu-of-%05zu.safetensors", i + 1, shards.size());
    std::map<std::string, at::Tensor> part;
    for (const auto& name : shards[i]) {
      const at::Tensor& t = tensors.at(name);
      part[name] = t;
      weight_map[name] = file;
      total += static_cast<uint64_t>(t.numel()) * t.element_size();
    }
    write_safetensors((fs::path(tmp) / file).string(), part, meta);
  }
  const json index = {{"metadata", {{"total_size", total}}}, {"weight_map", weight_map}};
  spade::write_file_atomic((fs::path(tmp) / "model.safetensors.index.json").string(), index.dump(2) + "\n");
}

}  // namespace

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

void save_checkpoint(const std::string& dir, Transformer& model, const CheckpointSaveOptions& o) {
  const c10::ScalarType dtype = dtype_from_name(o.dtype);
  if (o.max_shard_size == 0) throw spade::Error(dir + ": save_checkpoint: max_shard_size must be positive");
  const std::string tmp = dir + ".tmp";
  std::error_code ec;
  fs::remove_all(tmp, ec);
  fs::create_directories(tmp, ec);
  if (ec) throw spade::Error(tmp + ": cannot create directory: " + ec.message());
  try {
    ModelConfig cfg = model->config();
    cfg.torch_dtype = o.dtype;
    spade::write_file_atomic((fs::path(tmp) / "config.json").string(), cfg.to_json().dump(2) + "\n");

    json gen = {{"do_sample", true}, {"temperature", o.temperature}, {"top_p", o.top_p}, {"top_k", o.top_k}};
    if (cfg.bos_token_id >= 0) gen["bos_token_id"] = cfg.bos_token_id;
    if (cfg.eos_token_ids.size() == 1) gen["eos_token_id"] = cfg.eos_token_ids[0];
    else if (!cfg.eos_token_ids.empty()) gen["eos_token_id"] = cfg.eos_token_ids;
    spade::write_file_atomic((fs::path(tmp) / "generation_config.json").string(), gen.dump(2) + "\n");

    std::map<std::string, at::Tensor> tensors;
    {
      torch::NoGradGuard no_grad;
      for (const auto& p : model->named_parameters(/*recurse=*/true)) tensors[p.key()] = p.value().detach().to(torch::kCPU, dtype);
    }
    write_weights(tmp, tensors, o.max_shard_size);

    if (!o.tokenizer_model.empty()) {
      // HF tokenizer.json, or SentencePiece tokenizer.model. A user's tokenizer keeps its own config and
      // chat template; only spade's own SentencePiece tokenizers (trained without one) get ChatML's.
      bool json_tokenizer = fs::path(o.tokenizer_model).extension() == ".json";
      bool has_config = copy_tokenizer_files(o.tokenizer_model, json_tokenizer ? "tokenizer.json" : "tokenizer.model", tmp);
      if (!has_config && !json_tokenizer) write_chatml_tokenizer_config(tmp);
    }
  } catch (...) {
    fs::remove_all(tmp, ec);  // a failed save leaves no half-written directory behind
    throw;
  }
  spade::publish_directory(tmp, dir);
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
