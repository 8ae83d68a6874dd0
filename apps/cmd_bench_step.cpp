// `spade bench step`: one GRPO optimizer step (trainer::grpo_update) of a random model of a given shape
// on a given device, with train.device / train.autocast / train.activation_checkpointing / train.attention
// as options: tokens/s, MFU and peak memory as one JSON line (trainer/step_bench.h). Without --shape,
// --batch and --seq it runs a workload that fits the machine (trainer::fit_step_bench: the tiny shape on
// the CPU, the largest shape that fits on a GPU, Qwen3-4B at 8 x 4096 tokens on an H200: the GPU check
// of scripts/gpu/run_all.sh). An allocation failure is one line naming the shape, batch and device.
// --nproc N with --sharding: N local ranks over Gloo, the sharding overhead on the CPU (bench/RESULTS.md).
#include <ATen/Parallel.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <nlohmann/json.hpp>

#include "apps/commands.h"
#include "apps/error_text.h"
#include "apps/shape_options.h"
#include "common/error.h"
#include "trainer/device.h"
#include "trainer/device_memory.h"
#include "trainer/distributed.h"
#include "trainer/launch_local.h"
#include "trainer/step_bench.h"

namespace spade::apps {

void add_bench_step_command(CLI::App& app) {
  struct Args {
    trainer::StepBenchOptions o;
    std::string shape = "auto";
    ShapeOverrides model;
    int batch = 0, seq = 0;
    int threads = 0;
    std::string group = "none";
    int nproc = 0;
  };
  auto args = std::make_shared<Args>();
  std::string shapes = "auto";
  for (const std::string& n : policy::model_shape_names()) shapes += " | " + n;
  CLI::App* bench = bench_command(app);
  CLI::App* cmd = bench->add_subcommand("step", "one timed GRPO optimizer step of a random model: tokens/s, MFU, memory");
  cmd->add_option("--shape", args->shape,
                  shapes + ", then the overrides below; auto: one that fits this machine (tiny on the CPU; on a "
                  "GPU the largest whose weights, gradients and AdamW moments take half its free memory)");
  args->model.add_to(cmd);
  cmd->add_option("--batch", args->batch, "sequences per step (0: 8 on a GPU, 4 on the CPU)");
  cmd->add_option("--seq", args->seq, "tokens per sequence (0: 4096 on a GPU, 256 on the CPU)");
  cmd->add_option("--device", args->o.device, "auto | cpu | cuda | cuda:N (as train.device)");
  cmd->add_option("--autocast", args->o.autocast, "none | bf16 (as train.autocast)");
  cmd->add_option("--activation-checkpointing", args->o.activation_checkpointing, "true | false");
  cmd->add_option("--attention", args->o.attention, "auto | matmul | sdpa (as train.attention)");
  cmd->add_option("--micro-batch-tokens", args->o.micro_batch_tokens, "gradient-accumulation token budget");
  cmd->add_option("--logprob-chunk-rows", args->o.logprob_chunk_rows, "lm_head rows per chunk");
  cmd->add_option("--entropy-coef", args->o.entropy_coef, "as loss.entropy_coef: an entropy bonus");
  cmd->add_option("--warmup", args->o.warmup_steps, "untimed steps first");
  cmd->add_option("--steps", args->o.steps, "timed steps");
  cmd->add_option("--peak-tflops", args->o.peak_tflops, "MFU denominator (989: H100/H200 dense bf16)");
  cmd->add_option("--threads", args->threads, "intra-op threads (0 = LibTorch's default)");
  cmd->add_option("--group", args->group,
                  "none | gloo | nccl: join a process group of this one rank (in-process store) and run "
                  "the step's collectives through it");
  cmd->add_option("--sharding", args->o.sharding,
                  "none | optimizer | gradients | full (as distributed.sharding: ZeRO-1 / 2 / 3; full needs "
                  "--activation-checkpointing true); needs --group or --nproc");
  cmd->add_option("--prefetch", args->o.prefetch,
                  "true | false: with --sharding full, start each next layer's all-gather while a layer runs "
                  "(the trainer always does; false measures what it saves)");
  cmd->add_option("--nproc", args->nproc,
                  "N local ranks (as spade train --nproc), each stepping its own batch through a --group "
                  "(default gloo) of N; rank 0 prints the line")
      ->check(CLI::Range(1, 1024));
  cmd->callback([args, cmd] {
    if (args->nproc > 0) {
      if (std::getenv("RANK")) throw Error("bench step --nproc: this process is already a rank (drop --nproc under torchrun)");
      // The same command without --nproc, once per rank (the group from the launcher's environment).
      std::vector<std::string> rank_args = {"bench", "step"};
      for (const CLI::Option* opt : cmd->get_options()) {
        if (opt->get_name() == "--nproc" || opt->get_name() == "--group" || opt->count() == 0) continue;
        for (const std::string& v : opt->results()) rank_args.insert(rank_args.end(), {opt->get_name(), v});
      }
      rank_args.insert(rank_args.end(), {"--group", args->group == "none" ? "gloo" : args->group});
      set_action([args, rank_args] { return trainer::launch_local_ranks(args->nproc, rank_args); });
      return;
    }
    auto where = std::make_shared<std::string>();  // what is being run, for an allocation failure
    set_action(reporting_allocation_failures("bench step", where, [args, where]() -> int {
      if (args->threads > 0) at::set_num_threads(args->threads);
      trainer::StepBenchOptions o = args->o;
      const c10::Device device = trainer::resolve_train_device(o.device, 0);
      o.device = device.str();
      *where = "device " + device.str();
      const trainer::StepBenchFit fit = trainer::fit_step_bench(trainer::device_free_bytes(device));
      const std::string shape = args->shape == "auto" ? fit.shape : args->shape;
      if (args->shape == "auto")
        std::fprintf(stderr, "bench step: --shape auto on %s: %s (%s)\n", device.str().c_str(), shape.c_str(),
                     fit.reason.c_str());
      o.model = policy::named_model_shape(shape);  // throws naming the known shapes
      o.batch = args->batch > 0 ? args->batch : fit.batch;
      o.seq = args->seq > 0 ? args->seq : fit.seq;
      policy::ModelConfig& c = o.model;
      args->model.apply(c);
      c.validate("bench step");
      *where = "shape " + shape + " (" + std::to_string(c.num_hidden_layers) + " layers, hidden " +
               std::to_string(c.hidden_size) + ", intermediate " + std::to_string(c.intermediate_size) +
               ", vocab " + std::to_string(c.vocab_size) + ": " + std::to_string(c.num_parameters()) +
               " parameters), batch " + std::to_string(o.batch) + " x " + std::to_string(o.seq) + " tokens, " +
               device.str();
      std::unique_ptr<trainer::DistributedContext> dist;
      if (args->group != "none") {
        trainer::DistributedOptions d;
        d.backend = args->group;
        d.group_at_world_size_1 = true;
        // One rank with an in-process store, or rank RANK of a launched job (--nproc, torchrun).
        dist = std::make_unique<trainer::DistributedContext>(trainer::distributed_env_from_process(), d);
      }
      const trainer::StepBenchResult r = trainer::run_step_bench(o, dist.get());
      nlohmann::json j = {{"device", r.device}, {"shape", shape}, {"params", r.params},
                          {"layers", c.num_hidden_layers}, {"hidden", c.hidden_size}, {"vocab", c.vocab_size},
                          {"batch", o.batch}, {"seq", o.seq}, {"tokens", r.tokens}, {"autocast", o.autocast},
                          {"activation_checkpointing", o.activation_checkpointing}, {"attention", o.attention},
                          {"micro_batch_tokens", o.micro_batch_tokens}, {"micro_batches", r.micro_batches},
                          {"logprob_chunk_rows", o.logprob_chunk_rows}, {"entropy_coef", o.entropy_coef},
                          {"group", dist ? dist->backend() : "none"}, {"step_s", r.step_s},
                          {"tokens_per_s", r.tokens_per_s}, {"flops_per_token", r.flops_per_token},
                          {"peak_tflops", o.peak_tflops}, {"mfu", r.mfu}, {"peak_rss_mb", r.peak_rss_mb},
                          {"peak_gpu_allocated_mb", r.peak_gpu_allocated_mb},
                          {"peak_gpu_reserved_mb", r.peak_gpu_reserved_mb},
                          {"pg_loss", r.pg_loss}, {"grad_norm", r.grad_norm}, {"sharding", o.sharding},
                          {"world_size", r.world_size}, {"optimizer_state_bytes", r.optimizer_state_bytes},
                          {"prefetch", o.prefetch}, {"prefetched_gathers", r.prefetched_gathers}};
      if (!dist || dist->is_main()) std::printf("%s\n", j.dump().c_str());
      return 0;
    }));
  });
}

}  // namespace spade::apps
