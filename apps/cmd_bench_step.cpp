// `spade bench step`: one GRPO optimizer step (trainer::grpo_update) of a random model of a given shape
// on a given device, with train.device / train.autocast / train.activation_checkpointing / train.attention
// as options: tokens/s, MFU and peak memory as one JSON line (trainer/step_bench.h). The GPU check of
// issue 5 (scripts/gpu/run_all.sh, phase trainer: Qwen3-4B shape, bf16, 8 x 4096 tokens, NCCL group of one rank)
// and the CPU activation-checkpointing memory figure of bench/RESULTS.md.
#include <ATen/Parallel.h>

#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>

#include "apps/commands.h"
#include "apps/shape_options.h"
#include "common/error.h"
#include "trainer/distributed.h"
#include "trainer/step_bench.h"

namespace spade::apps {

void add_bench_step_command(CLI::App& app) {
  struct Args {
    trainer::StepBenchOptions o;
    std::string shape = "qwen3-4b";
    ShapeOverrides model;
    int threads = 0;
    std::string group = "none";
  };
  auto args = std::make_shared<Args>();
  CLI::App* bench = bench_command(app);
  CLI::App* cmd = bench->add_subcommand("step", "one timed GRPO optimizer step of a random model: tokens/s, MFU, memory");
  cmd->add_option("--shape", args->shape, "qwen3-4b (default; Qwen/Qwen3-4B config.json), then the overrides below");
  args->model.add_to(cmd);
  cmd->add_option("--batch", args->o.batch, "sequences per step (default 8)");
  cmd->add_option("--seq", args->o.seq, "tokens per sequence (default 4096)");
  cmd->add_option("--device", args->o.device, "auto | cpu | cuda | cuda:N (train.device)");
  cmd->add_option("--autocast", args->o.autocast, "none | bf16 (train.autocast; default bf16)");
  cmd->add_option("--activation-checkpointing", args->o.activation_checkpointing, "true | false (default true)");
  cmd->add_option("--attention", args->o.attention, "auto | matmul | sdpa (train.attention; default auto)");
  cmd->add_option("--micro-batch-tokens", args->o.micro_batch_tokens, "gradient-accumulation token budget (default 8192)");
  cmd->add_option("--logprob-chunk-rows", args->o.logprob_chunk_rows, "lm_head rows per chunk (default 2048)");
  cmd->add_option("--entropy-coef", args->o.entropy_coef, "loss.entropy_coef: an entropy bonus (default 0)");
  cmd->add_option("--warmup", args->o.warmup_steps, "untimed steps first (default 1)");
  cmd->add_option("--steps", args->o.steps, "timed steps (default 1)");
  cmd->add_option("--peak-tflops", args->o.peak_tflops, "MFU denominator (default 989: H100/H200 dense bf16)");
  cmd->add_option("--threads", args->threads, "intra-op threads (0 = LibTorch's default)");
  cmd->add_option("--group", args->group,
                  "none | gloo | nccl: join a process group of this one rank (in-process store) and run "
                  "the step's collectives through it");
  cmd->callback([args] {
    set_action([args]() -> int {
      if (args->threads > 0) at::set_num_threads(args->threads);
      trainer::StepBenchOptions o = args->o;
      if (args->shape != "qwen3-4b") throw spade::Error("bench step: unknown --shape '" + args->shape + "' (qwen3-4b)");
      policy::ModelConfig& c = o.model;
      args->model.apply(c);
      c.validate("bench step");
      std::unique_ptr<trainer::DistributedContext> dist;
      if (args->group != "none") {
        trainer::DistributedOptions d;
        d.backend = args->group;
        d.group_at_world_size_1 = true;
        dist = std::make_unique<trainer::DistributedContext>(trainer::DistributedEnv{}, d);
      }
      const trainer::StepBenchResult r = trainer::run_step_bench(o, dist.get());
      nlohmann::json j = {{"device", r.device}, {"params", r.params}, {"layers", c.num_hidden_layers},
                          {"hidden", c.hidden_size}, {"vocab", c.vocab_size}, {"batch", o.batch}, {"seq", o.seq},
                          {"tokens", r.tokens}, {"autocast", o.autocast},
                          {"activation_checkpointing", o.activation_checkpointing}, {"attention", o.attention},
                          {"micro_batch_tokens", o.micro_batch_tokens}, {"micro_batches", r.micro_batches},
                          {"logprob_chunk_rows", o.logprob_chunk_rows}, {"entropy_coef", o.entropy_coef},
                          {"group", dist ? dist->backend() : "none"}, {"step_s", r.step_s},
                          {"tokens_per_s", r.tokens_per_s}, {"flops_per_token", r.flops_per_token},
                          {"peak_tflops", o.peak_tflops}, {"mfu", r.mfu}, {"peak_rss_mb", r.peak_rss_mb},
                          {"peak_gpu_allocated_mb", r.peak_gpu_allocated_mb},
                          {"peak_gpu_reserved_mb", r.peak_gpu_reserved_mb},
                          {"pg_loss", r.pg_loss}, {"grad_norm", r.grad_norm}};
      std::printf("%s\n", j.dump().c_str());
      return 0;
    });
  });
}

}  // namespace spade::apps
