// spade: the command-line entry point. Thin: parse arguments, call a library, print.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <malloc.h>
#include <unistd.h>

#include "apps/commands.h"
#include "common/error.h"

int main(int argc, char** argv) {
  // OpenMP reads OMP_WAIT_POLICY when its runtime loads, before main(): spinning workers cost up to
  // 10x on a shared 2-core machine (measured in bench), so re-exec once with PASSIVE unless the user
  // chose a policy.
  if (std::getenv("OMP_WAIT_POLICY") == nullptr) {
    setenv("OMP_WAIT_POLICY", "PASSIVE", 1);
    execv("/proc/self/exe", argv);  // returns only on failure: then carry on as we are
  }
  // Keep large tensors (logits of a micro-batch are ~100 MB) on the heap so freed blocks are reused:
  // glibc's default maps every allocation over 32 MB afresh, and the page faults of zeroing it cost
  // a third of the training step's CPU time on this 2-core machine (measured: bench/RESULTS.md). And
  // never give the top of the heap back (-1 disables trimming, mallopt(3)): a training step frees
  // more than any finite threshold we would pick (~1-2 GiB at the bench shapes), and returning it with
  // brk only to fault it in again next step cost ~100 brk calls and ~290k page faults a step. Memory
  // stays at the step's high-water mark, as with PyTorch's CUDA caching allocator.
  mallopt(M_MMAP_THRESHOLD, 1 << 30);
  mallopt(M_TRIM_THRESHOLD, -1);

  CLI::App app{"spade: training LLMs by self-play (SPADE) and scoring them in SWE-Duel matches"};
  app.require_subcommand(1);
  spade::apps::add_train_commands(app);
  spade::apps::add_corpus_commands(app);
  spade::apps::add_envs_commands(app);
  spade::apps::add_generate_command(app);
  spade::apps::add_export_command(app);
  spade::apps::add_bench_sandbox_command(app);
  spade::apps::add_duel_protocol_commands(spade::apps::add_duel_commands(app));
  spade::apps::add_score_command(app);
  spade::apps::add_bench_sampler_command(app);
  spade::apps::add_bench_trainer_command(app);
  spade::apps::add_bench_step_command(app);
  spade::apps::add_bench_turns_command(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  try {
    return spade::apps::run_selected(app);
  } catch (const spade::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
