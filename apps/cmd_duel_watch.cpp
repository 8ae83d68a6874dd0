// `spade duel watch RUN_DIR [--once] [--until-step N] [--poll-s S] [--parent-pid P]`: scores a training
// run's checkpoints in SWE-Duel matches as they appear (apps/duel_watch.h). `spade train` starts one
// itself when duel.spawn_watcher is true (with --until-step and --parent-pid: it stops with its trainer);
// run it by hand for duel.spawn_watcher false, e.g. on another node or GPU.
#include <CLI/CLI.hpp>
#include <sys/prctl.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <memory>

#include "apps/commands.h"
#include "apps/duel_watch.h"

namespace spade::apps {

void add_duel_watch_command(CLI::App* duel) {
  auto o = std::make_shared<DuelWatchOptions>();
  auto parent = std::make_shared<int>(0);
  CLI::App* cmd = duel->add_subcommand("watch", "score a training run's checkpoints in duel matches as they appear");
  cmd->add_option("run_dir", o->run_dir, "the run directory (its config.yaml has a duel: section)")->required();
  cmd->add_flag("--once", o->once, "score the checkpoints present now, then exit");
  cmd->add_option("--until-step", o->until_step, "exit once the last scored step <= N is scored");
  cmd->add_option("--poll-s", o->poll_s, "seconds between looks for new checkpoints")->check(CLI::Range(0.01, 3600.0));
  cmd->add_option("--parent-pid", *parent, "exit when process P (the trainer that started this) exits");
  cmd->callback([o, parent] {
    set_action([o, parent]() -> int {
      if (*parent > 0) {
        prctl(PR_SET_PDEATHSIG, SIGTERM);  // the trainer killed (kill -9 too): this watcher goes with it
        if (getppid() != *parent) return 0;  // it went before the line above
      }
      const int n = duel_watch(*o, [](const std::string& line) {
        std::printf("%s\n", line.c_str());
        std::fflush(stdout);
      });
      std::printf("duel watch: %d checkpoint%s scored\n", n, n == 1 ? "" : "s");
      return 0;
    });
  });
}

}  // namespace spade::apps
