#include "policy/checkpoint_writer.h"

#include <torch/torch.h>

#include <cstdio>
#include <filesystem>
#include <map>

#include "common/atomic_file.h"
#include "common/error.h"
#include "policy/safetensors.h"
#include "policy/tokenizer.h"

namespace spade::policy {
namespace fs = std::filesystem;
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

// Groups tensors (name -> bytes, in name order) into shards of at most `max_bytes` of tensor data each,
// as huggingface_hub's split_state_dict_into_shards_factory does: a new shard when the next tensor
// would take the current one past the limit; a tensor larger than the limit alone in its own shard.
std::vector<std::vector<std::string>> plan_shards(const std::map<std::string, uint64_t>& tensors, uint64_t max_bytes) {
  std::vector<std::vector<std::string>> shards;
  std::vector<std::string> current;
  uint64_t current_bytes = 0;
  for (const auto& [name, bytes] : tensors) {
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

}  // namespace

CheckpointWriter::CheckpointWriter(std::string dir, const ModelConfig& config, const ParameterShapes& parameters,
                                   const CheckpointSaveOptions& options)
    : dir_(std::move(dir)), tmp_(dir_ + ".tmp"), options_(options) {
  const c10::ScalarType dtype = dtype_from_name(options.dtype);
  if (options.max_shard_size == 0) throw spade::Error(dir_ + ": save_checkpoint: max_shard_size must be positive");
  std::error_code ec;
  fs::remove_all(tmp_, ec);
  fs::create_directories(tmp_, ec);
  if (ec) throw spade::Error(tmp_ + ": cannot create directory: " + ec.message());
  try {
    ModelConfig cfg = config;
    cfg.torch_dtype = options.dtype;
    spade::write_file_atomic((fs::path(tmp_) / "config.json").string(), cfg.to_json().dump(2) + "\n");

    json gen = {{"do_sample", true}, {"temperature", options.temperature}, {"top_p", options.top_p},
                {"top_k", options.top_k}};
    if (cfg.bos_token_id >= 0) gen["bos_token_id"] = cfg.bos_token_id;
    if (cfg.eos_token_ids.size() == 1) gen["eos_token_id"] = cfg.eos_token_ids[0];
    else if (!cfg.eos_token_ids.empty()) gen["eos_token_id"] = cfg.eos_token_ids;
    spade::write_file_atomic((fs::path(tmp_) / "generation_config.json").string(), gen.dump(2) + "\n");

    // The weight files: model.safetensors when everything fits in one shard, else
    // model-0000I-of-0000N.safetensors (the index is written by commit()).
    std::map<std::string, uint64_t> bytes;
    std::map<std::string, const std::vector<int64_t>*> shape;
    for (const auto& [name, sizes] : parameters) {
      uint64_t n = static_cast<uint64_t>(c10::elementSize(dtype));
      for (const int64_t d : sizes) n *= static_cast<uint64_t>(d);
      if (!bytes.emplace(name, n).second) throw spade::Error(dir_ + ": parameter '" + name + "' is listed twice");
      shape[name] = &sizes;
    }
    auto shards = plan_shards(bytes, options.max_shard_size);
    if (shards.empty()) shards.emplace_back();  // no parameters: an empty model.safetensors
    for (size_t i = 0; i < shards.size(); ++i) {
      char file[64];
      std::snprintf(file, sizeof(file), "model-%05zu-of-%05zu.safetensors", i + 1, shards.size());
      file_names_.push_back(shards.size() <= 1 ? "model.safetensors" : file);
      std::vector<SafetensorsTensorSpec> specs;
      for (const std::string& name : shards[i]) {
        specs.push_back({name, dtype, *shape.at(name)});
        file_of_[name] = i;
      }
      files_.push_back(std::make_unique<SafetensorsWriter>((fs::path(tmp_) / file_names_.back()).string(),
                                                           std::move(specs)));
    }
  } catch (...) {
    files_.clear();
    fs::remove_all(tmp_, ec);
    throw;
  }
}

CheckpointWriter::~CheckpointWriter() {
  files_.clear();  // closes (and, uncommitted, removes) the weight files first
  if (committed_) return;
  std::error_code ec;
  fs::remove_all(tmp_, ec);  // a failed save leaves no half-written directory behind
}

void CheckpointWriter::write(const std::string& name, const at::Tensor& value) {
  const auto it = file_of_.find(name);
  if (it != file_of_.end()) {
    torch::NoGradGuard no_grad;
    files_[it->second]->write(name, value);
    return;
  }
  throw spade::Error(dir_ + ": parameter '" + name + "' is not one of the model's (the checkpoint was planned without it)");
}

void CheckpointWriter::commit() {
  if (committed_) return;
  json weight_map = json::object();
  uint64_t total = 0;
  for (auto& f : files_) {
    f->commit();
    total += f->data_bytes();
  }
  if (files_.size() > 1) {
    for (const auto& [name, file] : file_of_) weight_map[name] = file_names_[file];
    const json index = {{"metadata", {{"total_size", total}}}, {"weight_map", weight_map}};
    spade::write_file_atomic((fs::path(tmp_) / "model.safetensors.index.json").string(), index.dump(2) + "\n");
  }
  if (!options_.tokenizer_model.empty()) {
    // HF tokenizer.json, or SentencePiece tokenizer.model. A user's tokenizer keeps its own config and
    // chat template; only spade's own SentencePiece tokenizers (trained without one) get ChatML's.
    const bool json_tokenizer = fs::path(options_.tokenizer_model).extension() == ".json";
    const bool has_config =
        copy_tokenizer_files(options_.tokenizer_model, json_tokenizer ? "tokenizer.json" : "tokenizer.model", tmp_);
    if (!has_config && !json_tokenizer) write_chatml_tokenizer_config(tmp_);
  }
  spade::publish_directory(tmp_, dir_);
  committed_ = true;
}

void save_checkpoint(const std::string& dir, Transformer& model, const CheckpointSaveOptions& options) {
  CheckpointWriter::ParameterShapes shapes;
  const auto parameters = model->named_parameters(/*recurse=*/true);
  for (const auto& p : parameters) shapes.emplace_back(p.key(), p.value().sizes().vec());
  CheckpointWriter writer(dir, model->config(), shapes, options);
  for (const auto& p : parameters) writer.write(p.key(), p.value());
  writer.commit();
}

}  // namespace spade::policy
