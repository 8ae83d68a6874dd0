// `spade export CHECKPOINT --out DIR [--dtype fp32|bf16] [--max-shard-size BYTES]`: a clean HF
// checkpoint (issue 5) from a training checkpoint (runs/<name>/checkpoints/step_NNNNNN), without the
// trainer state.
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
};
}  // namespace

void add_export_command(CLI::App& app) {
  auto args = std::make_shared<ExportArgs>();
  CLI::App* cmd = app.add_subcommand("export", "write a clean HF checkpoint (no trainer state) of a training checkpoint");
  cmd->add_option("checkpoint", args->checkpoint, "checkpoint directory, e.g. runs/NAME/checkpoints/step_000016")
      ->required();
  cmd->add_option("--out", args->out, "output directory (replaced if it exists)")->required();
  cmd->add_option("--dtype", args->dtype, "tensor dtype of model.safetensors: fp32 (exact) or bf16")
      ->check(CLI::IsMember({"fp32", "bf16"}));
  cmd->add_option("--max-shard-size", args->max_shard_size,
                  "largest weight file in bytes; above it shards model-0000I-of-0000N.safetensors + "
                  "model.safetensors.index.json are written (transformers' default, \"5GB\")")
      ->check(CLI::PositiveNumber);
  cmd->callback([args] {
    set_action([args] {
      trainer::export_checkpoint(args->checkpoint, args->out, args->dtype, args->max_shard_size);
      std::printf("exported %s -> %s (%s)\n", args->checkpoint.c_str(), args->out.c_str(), args->dtype.c_str());
      return 0;
    });
  });
}

}  // namespace spade::apps
