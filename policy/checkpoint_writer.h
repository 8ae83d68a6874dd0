// Streaming writer of an HF-layout checkpoint (the layout of policy/checkpoint.h: config.json,
// generation_config.json, model.safetensors or shards + model.safetensors.index.json, tokenizer files),
// for weights that arrive one tensor at a time: ZeRO-3's parameters are gathered unit by unit
// (trainer/parameter_shards.h), so no rank ever holds the whole model to save it; save_checkpoint uses
// it too, converting one tensor at a time instead of the whole model at once.
// The files are planned up front from the parameters' names and shapes (shards split in name order as
// huggingface_hub does), so the result is the same bytes whatever order the tensors are written in.
// Not thread-safe; one writer per directory.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "policy/checkpoint.h"
#include "policy/model_config.h"

namespace spade::policy {

class SafetensorsWriter;

class CheckpointWriter {
 public:
  /// Module parameter names (Transformer::named_parameters, e.g. "model.layers.0.mlp.up_proj.weight")
  /// and their shapes.
  using ParameterShapes = std::vector<std::pair<std::string, std::vector<int64_t>>>;

  /// Starts `dir`.tmp (removed first if an interrupted save left it): writes config.json (torch_dtype =
  /// options.dtype) and generation_config.json, and creates the weight files with their headers.
  /// Throws spade::Error on I/O failure, an unsupported dtype or a zero max_shard_size.
  CheckpointWriter(std::string dir, const ModelConfig& config, const ParameterShapes& parameters,
                   const CheckpointSaveOptions& options);
  /// Not committed: removes `dir`.tmp (a failed save leaves nothing half-written).
  ~CheckpointWriter();
  CheckpointWriter(const CheckpointWriter&) = delete;
  CheckpointWriter& operator=(const CheckpointWriter&) = delete;

  /// Writes parameter `name`'s values (any device and dtype; cast to options.dtype on the CPU). Throws
  /// spade::Error naming the file and tensor for an unknown name, a second write or a shape mismatch.
  void write(const std::string& name, const at::Tensor& value);
  /// The directory being written (`dir`.tmp): files put there before commit() are published with the
  /// checkpoint (the trainer's full-precision weights of a bf16 checkpoint).
  const std::string& staging_dir() const { return tmp_; }
  /// Finishes the weight files (every parameter must have been written: else spade::Error naming the
  /// first missing), the shard index, the tokenizer files, and publishes `dir` with one rename,
  /// replacing an existing `dir` whole.
  void commit();

 private:
  std::string dir_, tmp_;
  CheckpointSaveOptions options_;
  std::vector<std::unique_ptr<SafetensorsWriter>> files_;
  std::vector<std::string> file_names_;
  std::map<std::string, size_t> file_of_;  // parameter name -> index in files_
  bool committed_ = false;
};

}  // namespace spade::policy
