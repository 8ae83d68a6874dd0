// `spade export CHECKPOINT --out DIR [--dtype fp32|bf16] [--max-shard-size BYTES] [--overwrite]`: a
// clean HF checkpoint from a training checkpoint (runs/<name>/checkpoints/step_NNNNNN), without the
// trainer state. --out follows common/output_path.h.
#include <cstdio>
#include <memory>

#include "apps/commands.h"
#include "policy/checkpoint.h"
#include "trainer/checkpointing.h"

namespace spade::apps {

namespace {
struct ExportArgs {
  std::string checkpoint;
  std::string out;
  std::string dtype = "fp32";
  uint64_t max_shard_size = policy::kDefaultMaxShardSize;
  bool overwrite = false;
};
}  // namespace

void add_export_command(CLI::App& app) {
  auto args = std::make_shared<ExportArgs>();
  CLI::App* cmd = app.add_subcommand("export", "write a clean HF checkpoint (no trainer state) of a training checkpoint");
  cmd->add_option("checkpoint", args->checkpoint, "checkpoint directory, e.g. runs/NAME/checkpoints/step_000016")
      ->required();
  cmd->add_option("--out", args->out,
                  "output directory: new or empty, in an existing directory (see --overwrite)")->required();
  cmd->add_flag("--overwrite", args->overwrite,
                "replace a non-empty --out (never one that holds the checkpoint, a run directory or the current "
                "directory); the new files are written beside it and renamed over it");
  cmd->add_option("--dtype", args->dtype, "tensor dtype of model.safetensors: fp32 (exact) or bf16")
      ->check(CLI::IsMember({"fp32", "bf16"}));
  cmd->add_option("--max-shard-size", args->max_shard_size,
                  "largest weight file in bytes; above it shards model-0000I-of-0000N.safetensors + "
                  "model.safetensors.index.json are written (transformers' default, \"5GB\")")
      ->check(CLI::PositiveNumber);
  cmd->callback([args] {
    set_action([args] {
      trainer::export_checkpoint(args->checkpoint, args->out, args->dtype, args->max_shard_size, args->overwrite);
      std::printf("exported %s -> %s (%s)\n", args->checkpoint.c_str(), args->out.c_str(), args->dtype.c_str());
      return 0;
    });
  });
}

}  // namespace spade::apps
