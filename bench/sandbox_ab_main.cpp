// `bench sandbox` alone, without LibTorch: bench/sandbox_ab.sh links this tree's apps/cmd_bench_sandbox.cpp
// with it against the envsandbox and common libraries of either side of a comparison, so both sides run
// the same bench code and differ only in the sandbox.
#include <CLI/CLI.hpp>

#include "apps/commands.h"

int main(int argc, char** argv) {
  CLI::App app{"spade bench sandbox, linked against one tree's sandbox (bench/sandbox_ab.sh)"};
  app.require_subcommand(1);
  spade::apps::add_bench_sandbox_command(app);
  CLI11_PARSE(app, argc, argv);
  return spade::apps::run_selected(app);
}
