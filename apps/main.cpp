// spade: the command-line entry point. Thin: parse arguments, call a library, print.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <malloc.h>
#include <unistd.h>

#include "apps/cli_usage.h"
#include "apps/commands.h"
#include "apps/error_text.h"
#include "apps/version.h"

namespace {

// `spade help [CMD...]`: the help of a command, as `spade CMD... --help` prints it.
void add_help_command(CLI::App& app) {
  auto words = std::make_shared<std::vector<std::string>>();
  CLI::App* help = app.add_subcommand("help", "print the help of a command: `spade help duel match` is `spade duel match --help`");
  help->add_option("command", *words, "the command's words (none: the list of commands)");
  help->callback([&app, words] {
    std::string error;
    const CLI::App* cmd = spade::apps::find_command(app, *words, &error);
    spade::apps::set_action([cmd, error] {
      if (cmd == nullptr) {  // an unknown word: a usage error
        std::fprintf(stderr, "error: %s\nrun 'spade --help' for the commands\n", error.c_str());
        return 2;
      }
      std::cout << spade::apps::help_text(*cmd) << std::flush;
      return 0;
    });
  });
}

}  // namespace

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

  CLI::App app{"spade: training LLMs by self-play (SPADE) and scoring them in SWE-Duel matches", "spade"};
  app.require_subcommand(1);
  // Every option added from here on, in every subcommand, shows its default value in --help.
  app.option_defaults()->always_capture_default();
  app.formatter(std::make_shared<spade::apps::HelpFormatter>());
  app.set_version_flag("--version", std::function<std::string()>(spade::apps::version_text),
                       "print the version of spade and of the LibTorch it was built with, then exit");
  spade::apps::add_train_commands(app);
  spade::apps::add_corpus_commands(app);
  spade::apps::add_envs_commands(app);
  spade::apps::add_generate_command(app);
  spade::apps::add_export_command(app);
  spade::apps::add_bench_sandbox_command(app);
  spade::apps::add_duel_protocol_commands(spade::apps::add_duel_commands(app));
  CLI::App* duel = spade::apps::add_duel_commands(app);
  spade::apps::add_duel_board_commands(duel);
  spade::apps::add_duel_watch_command(duel);
  spade::apps::add_score_command(app);
  spade::apps::add_report_command(app);
  spade::apps::add_eval_command(app);
  spade::apps::add_ablate_command(app);
  spade::apps::add_bench_sampler_command(app);
  spade::apps::add_bench_trainer_command(app);
  spade::apps::add_bench_step_command(app);
  spade::apps::add_bench_turns_command(app);
  spade::apps::add_serve_command(app);
  spade::apps::add_bench_serve_command(app);
  add_help_command(app);
  app.footer("`spade help CMD` (or `spade CMD --help`) shows a command's options.");  // after: not inherited
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success)) return app.exit(e);  // --help, --version
    std::fprintf(stderr, "error: %s\n", spade::apps::explain_parse_error(app, e).c_str());
    std::fprintf(stderr, "run '%s --help' for usage\n", spade::apps::command_path(spade::apps::parsed_command(app)).c_str());
    return 2;
  }
  try {
    return spade::apps::run_selected(app);
  } catch (const std::exception& e) {
    // LibTorch's errors without their C++ backtrace, allocation failures on one line.
    std::fprintf(stderr, "error: %s\n", spade::apps::describe_error(e).c_str());
    return 1;
  }
}
