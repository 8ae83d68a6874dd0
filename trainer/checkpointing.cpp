#include "trainer/checkpointing.h"

#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>
#include <filesystem>
#include <mutex>

#include "common/atomic_file.h"
#include "common/output_path.h"
#include "common/error.h"
#include "common/strings.h"
#include "policy/checkpoint.h"
#include "policy/safetensors.h"
#include "policy/tokenizer.h"
#include "trainer/optimizer_shards.h"

namespace fs = std::filesystem;

namespace spade::trainer {

namespace {

constexpr const char* kStateDir = "trainer_state";

bool is_step_dir_name(const std::string& name) {
  if (name.size() != 11 || !starts_with(name, "step_")) return false;
  return std::all_of(name.begin() + 5, name.end(), [](char c) { return c >= '0' && c <= '9'; });
}

void save_torch_rng(const std::string& path) {
  at::Generator gen = at::detail::getDefaultCPUGenerator();
  torch::Tensor state;
  {
    std::lock_guard<std::mutex> lock(gen.mutex());
    state = gen.get_state();
  }
  torch::save(state, path);
}

void load_torch_rng(const std::string& path) {
  torch::Tensor state;
  torch::load(state, path);
  at::Generator gen = at::detail::getDefaultCPUGenerator();
  std::lock_guard<std::mutex> lock(gen.mutex());
  gen.set_state(state);
}

// Where the ranks stage their optimizer shards for `step` before rank 0 publishes the checkpoint.
std::string shards_stage_dir(const RunDir& run, int64_t step) {
  return run.checkpoints_dir() + "/.shards_" + fs::path(run.checkpoint_dir(step)).filename().string();
}

// Moves the complete set of `world` staged shard files from `from` into `to`.
void collect_optimizer_shards(const std::string& from, const std::string& to, int world) {
  for (int r = 0; r < world; ++r) {
    const std::string name = optimizer_shard_file(r, world);
    std::error_code ec;
    fs::rename(from + "/" + name, to + "/" + name, ec);
    if (ec)
      throw Error("checkpoint: cannot move optimizer shard " + from + "/" + name + " into " + to + ": " +
                  ec.message() + " (did rank " + std::to_string(r) + " write it? write_optimizer_shard)");
  }
  std::error_code ec;
  fs::remove_all(from, ec);
}

}  // namespace

void write_optimizer_shard(const RunDir& run, int64_t step, const ShardedAdamW& optimizer) {
  const std::string dir = shards_stage_dir(run, step);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw Error("checkpoint: cannot create " + dir + ": " + ec.message());
  save_optimizer_shard(optimizer, dir);
}

CheckpointWeights model_weights(policy::Transformer model) {
  CheckpointWeights w;
  for (const auto& p : model->named_parameters()) w.shapes.emplace_back(p.key(), p.value().sizes().vec());
  w.for_each = [model](const CheckpointWeights::Visit& visit) {
    for (const auto& p : model->named_parameters()) visit(p.key(), p.value());
  };
  return w;
}

CheckpointWeights sharded_weights(const ShardedAdamW& optimizer) {
  const ParameterShards& shards = optimizer.parameter_shards();
  CheckpointWeights w;
  for (size_t i = 0; i < shards.names().size(); ++i) w.shapes.emplace_back(shards.names()[i], shards.shapes()[i]);
  w.for_each = [&shards](const CheckpointWeights::Visit& visit) {
    shards.gather_each([&](size_t, const std::string& name, const torch::Tensor& values) { visit(name, values); });
  };
  return w;
}

std::string save_training_checkpoint(const RunDir& run, int64_t step, const rollout::PolicyRef& policy,
                                     const std::string& dtype, const TrainerStateRefs* trainer_state,
                                     const CheckpointWeights* weights) {
  policy::CheckpointSaveOptions options;
  options.dtype = policy::checkpoint_dtype(dtype);
  options.tokenizer_model = policy.tokenizer.model_path();
  const std::string dir = run.checkpoint_dir(step);
  const CheckpointWeights own = weights ? CheckpointWeights{} : model_weights(policy.model);
  const CheckpointWeights& source = weights ? *weights : own;
  // With trainer state: stage the policy (itself written to stage.tmp and renamed), then the trainer
  // state inside it, state.json last; then one rename publishes the complete checkpoint.
  const std::string stage =
      trainer_state ? run.checkpoints_dir() + "/.stage_" + fs::path(dir).filename().string() : dir;
  std::error_code ec;
  if (trainer_state) fs::remove_all(stage, ec);
  {
    policy::CheckpointWriter writer(stage, policy.model->config(), source.shapes, options);
    // bf16 weights: the exact float32 ones beside them, written in the same pass.
    std::unique_ptr<policy::SafetensorsWriter> fp32;
    if (trainer_state && options.dtype != "float32") {
      const std::string sdir = writer.staging_dir() + "/" + kStateDir;
      fs::create_directories(sdir, ec);
      if (ec) throw Error("checkpoint: cannot create " + sdir + ": " + ec.message());
      std::vector<policy::SafetensorsTensorSpec> specs;
      for (const auto& [name, shape] : source.shapes) specs.push_back({name, torch::kFloat, shape});
      fp32 = std::make_unique<policy::SafetensorsWriter>(sdir + "/model_fp32.safetensors", std::move(specs));
    }
    source.for_each([&](const std::string& name, const torch::Tensor& values) {
      writer.write(name, values);
      if (fp32) fp32->write(name, values);
    });
    if (fp32) fp32->commit();
    writer.commit();
  }
  if (!trainer_state) return dir;
  const std::string sdir = stage + "/" + kStateDir;
  fs::create_directories(sdir, ec);
  if (ec) throw Error("checkpoint: cannot create " + sdir + ": " + ec.message());
  try {
    if (const auto* sharded = dynamic_cast<const ShardedAdamW*>(&trainer_state->optimizer))
      collect_optimizer_shards(shards_stage_dir(run, step), sdir, sharded->world_size());
    else
      torch::save(trainer_state->optimizer, sdir + "/optimizer.pt");
    save_torch_rng(sdir + "/torch_rng.pt");
  } catch (const c10::Error& e) {
    throw Error("checkpoint: cannot write the torch archives under " + sdir + ": " + e.what_without_backtrace());
  }
  trainer_state->memory.save(sdir + "/memory.json");
  write_file_atomic(sdir + "/state.json", state_to_json(trainer_state->state).dump());
  publish_directory(stage, dir);
  return dir;
}

std::string latest_resumable_checkpoint(const RunDir& run) {
  std::vector<std::string> names;
  std::error_code ec;
  for (auto& e : fs::directory_iterator(run.checkpoints_dir(), ec)) {
    const std::string name = e.path().filename().string();
    if (starts_with(name, ".stage_") || starts_with(name, ".shards_") || ends_with(name, ".tmp") || ends_with(name, ".old")) {
      fs::remove_all(e.path(), ec);  // an interrupted save
      continue;
    }
    if (e.is_directory() && is_step_dir_name(name) &&
        fs::exists(e.path() / kStateDir / "state.json"))
      names.push_back(name);
  }
  if (names.empty()) return "";
  std::sort(names.begin(), names.end());
  return run.checkpoints_dir() + "/" + names.back();
}

policy::Transformer load_training_policy(const std::string& checkpoint_dir) {
  policy::Transformer model = policy::load_checkpoint(checkpoint_dir);
  const std::string fp32 = checkpoint_dir + "/" + kStateDir + "/model_fp32.safetensors";
  const std::string legacy = checkpoint_dir + "/" + kStateDir + "/model_fp32.pt";
  torch::NoGradGuard no_grad;
  if (fs::exists(fp32)) {
    const std::shared_ptr<policy::SafetensorsFile> f = policy::SafetensorsFile::open(fp32);
    for (auto& p : model->named_parameters()) {
      if (!f->contains(p.key())) throw Error("checkpoint: " + fp32 + ": tensor '" + p.key() + "' is missing");
      const torch::Tensor t = f->get(p.key());
      if (t.sizes() != p.value().sizes() || t.scalar_type() != torch::kFloat)
        throw Error("checkpoint: " + fp32 + ": tensor '" + p.key() + "' is " + c10::str(t.sizes()) + " " +
                    c10::toString(t.scalar_type()) + ", the model's is " + c10::str(p.value().sizes()) + " Float");
      p.value().copy_(t);
    }
    if (f->names().size() != model->named_parameters().size())
      throw Error("checkpoint: " + fp32 + " holds " + std::to_string(f->names().size()) + " tensors, the model has " +
                  std::to_string(model->named_parameters().size()) + " parameters");
  } else if (fs::exists(legacy)) {
    try {
      torch::load(model, legacy, torch::Device(torch::kCPU));  // trained on any device; loaded on the CPU
    } catch (const c10::Error& e) {
      throw Error("checkpoint: cannot read " + legacy + ": " + e.what_without_backtrace());
    }
  }
  return model;
}

SelfPlayState load_trainer_state(const std::string& checkpoint_dir, torch::optim::Optimizer& optimizer,
                                 EnvMemory& memory) {
  const std::string sdir = checkpoint_dir + "/" + kStateDir;
  const std::string state_path = sdir + "/state.json";
  SelfPlayState state;
  try {
    state = state_from_json(nlohmann::json::parse(read_file(state_path)));
  } catch (const nlohmann::json::exception& e) {
    throw Error("checkpoint: malformed trainer state " + state_path + ": " + e.what());
  } catch (const Error& e) {
    throw Error("checkpoint: malformed trainer state " + state_path + ": " + e.what());
  }
  auto* sharded = dynamic_cast<ShardedAdamW*>(&optimizer);
  const bool saved_sharded = has_optimizer_shards(sdir);
  if (sharded && !saved_sharded)
    throw Error("checkpoint: " + sdir + " holds no optimizer shard files but this run shards the optimizer "
                "(distributed.sharding " + sharding_name(sharded->mode()) +
                "); resume it with distributed.sharding none, as it was written");
  if (!sharded && saved_sharded)
    throw Error("checkpoint: " + sdir + " holds a sharded optimizer (optimizer_shard_*.pt); resume it with "
                "distributed.sharding optimizer, gradients or full");
  for (const char* f : {"optimizer.pt", "torch_rng.pt"})
    if ((!sharded || std::string(f) != "optimizer.pt") && !fs::exists(sdir + "/" + f))
      throw Error("checkpoint: " + sdir + "/" + f + " is missing (an incomplete or foreign checkpoint)");
  if (sharded) {
    try {
      load_optimizer_shards(*sharded, sdir);
    } catch (const Error& e) {
      throw Error("checkpoint: " + std::string(e.what()));
    }
  }
  try {
    // AdamW moments onto the parameters' device (train.device; saved from whichever device trained).
    c10::optional<torch::Device> device;
    for (const auto& group : optimizer.param_groups())
      for (const torch::Tensor& p : group.params()) if (!device) device = p.device();
    if (!sharded) torch::load(optimizer, sdir + "/optimizer.pt", device);
    load_torch_rng(sdir + "/torch_rng.pt");
  } catch (const c10::Error& e) {
    throw Error("checkpoint: cannot restore the optimizer or torch RNG from " + sdir + ": " +
                e.what_without_backtrace() + " (was it written by a model of another shape?)");
  }
  memory.load(sdir + "/memory.json");
  return state;
}

void export_checkpoint(const std::string& checkpoint_dir, const std::string& out_dir, const std::string& dtype,
                       uint64_t max_shard_size, bool overwrite) {
  policy::CheckpointSaveOptions options;
  try {
    options.dtype = policy::checkpoint_dtype(dtype);
  } catch (const Error& e) {
    throw Error(std::string("export: --dtype: ") + e.what());
  }
  const fs::path src = fs::weakly_canonical(checkpoint_dir);
  const fs::path out = fs::weakly_canonical(out_dir);
  if (!fs::exists(src / "config.json"))
    throw Error("export: " + checkpoint_dir + "/config.json does not exist (expected a checkpoint directory "
                "such as runs/<name>/checkpoints/step_000016)");
  const std::string rel = out.lexically_relative(src).string();
  if (out == src || (!rel.empty() && rel != "." && !starts_with(rel, "..")))
    throw Error("export: --out " + out_dir + " must lie outside the checkpoint " + checkpoint_dir);
  OutputRule rule;
  rule.what = "export --out";
  rule.overwrite = overwrite;
  rule.inputs = {checkpoint_dir};
  StagedDir staged(out_dir, rule);  // refuses before the weights are read
  policy::Transformer model = load_training_policy(src.string());
  options.tokenizer_model = policy::Tokenizer::file_in_dir(src.string());  // tokenizer.json or .model; "" if none
  if (max_shard_size > 0) options.max_shard_size = max_shard_size;
  policy::save_checkpoint(staged.path(), model, options);
  staged.commit();
}

}  // namespace spade::trainer
