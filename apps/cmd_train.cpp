#include <torch/cuda.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>
#include <unistd.h>

#include "apps/child_process.h"
#include "apps/commands.h"
#include "apps/config_args.h"
#include "common/atomic_file.h"
#include "common/error.h"
#include "trainer/config_checks.h"
#include "trainer/device_memory.h"
#include "trainer/launch_local.h"
#include "trainer/run_plan.h"
#include "trainer/train.h"

namespace spade::apps {

namespace {
// --overwrite of train and sft (trainer/run_open.h).
void add_overwrite_option(CLI::App* cmd, ConfigArgs& args) {
  cmd->add_flag("--overwrite", args.overwrite,
                "replace the run already in <run.out_dir>/<name>/ (only a directory holding a spade run and "
                "nothing else, and never one holding an input of the config); without it an existing run is "
                "refused");
}

trainer::TrainOptions train_options(const ConfigArgs& args, bool selfplay) {
  trainer::TrainOptions o;
  o.selfplay = selfplay;
  o.overwrite = args.overwrite;
  o.inputs = config_inputs(args);
  return o;
}

// What the dry-run's plan sees of this machine: the launcher's WORLD_SIZE and, when a GPU is visible,
// the total memory of the one this rank would train on (train.device cuda:N, else cuda:LOCAL_RANK).
trainer::PlanMachine this_machine(const trainer::Config& c) {
  trainer::PlanMachine m;
  if (const char* w = std::getenv("WORLD_SIZE")) m.world_size = std::max(0, std::atoi(w));
  if (!torch::cuda::is_available()) return m;
  m.gpu_visible = true;
  const char* local = std::getenv("LOCAL_RANK");
  int index = local ? std::atoi(local) : 0;
  if (c.train.device.rfind("cuda:", 0) == 0) index = std::atoi(c.train.device.c_str() + 5);
  if (index < 0 || index >= static_cast<int>(torch::cuda::device_count())) return m;
  const c10::Device device(c10::DeviceType::CUDA, static_cast<c10::DeviceIndex>(index));
  m.gpu_name = device.str();
  m.gpu_bytes = trainer::device_total_bytes(device).value_or(0);
  return m;
}

// `train --dry-run`, `config check`: what the run would do; touches nothing under run.out_dir.
int print_plan(const trainer::Config& c, const std::string& source) {
  std::printf("config %s: ok\n%s", source.c_str(), trainer::describe(trainer::plan_run(c, this_machine(c)), c).c_str());
  return 0;
}

void print_line(const std::string& line) {
  std::printf("%s\n", line.c_str());
  std::fflush(stdout);
}

// The duel watcher `spade train` starts when duel.every > 0 and duel.spawn_watcher (apps/duel_watch.h):
// `spade duel watch RUN_DIR --until-step STEPS --parent-pid PID`, its output in RUN_DIR/duel/watch.log.
// Training never waits for it; when training ends, wait() waits for it to score the last checkpoint.
// The main rank starts it (a launched job's other ranks never do).
class DuelWatcher {
 public:
  explicit DuelWatcher(const trainer::Config& c) : c_(c) {}
  std::function<void(const trainer::RunDir&)> starter() {
    if (c_.duel.every <= 0 || !c_.duel.spawn_watcher) return nullptr;
    return [this](const trainer::RunDir& run) {
      std::filesystem::create_directories(run.root + "/duel");
      proc_.emplace(ChildProcess::start({"", "duel", "watch", run.root, "--until-step", std::to_string(c_.selfplay.steps),
                                         "--parent-pid", std::to_string(getpid())},
                                        run.root + "/duel/watch.log"));
      print_line("duel: scoring every " + std::to_string(c_.duel.every) + " steps in a watcher (pid " +
                 std::to_string(proc_->pid()) + ", log " + proc_->log_path() + ")");
    };
  }
  // The watcher's exit status, 0 when none was started.
  int wait() {
    if (!proc_) return 0;
    print_line("duel: training done; waiting for the watcher to score the last checkpoint (" + proc_->log_path() + ")");
    const int rc = proc_->wait();
    if (rc != 0) print_line("duel: the watcher failed (status " + std::to_string(rc) + "); its last lines:\n" + proc_->log_tail());
    return rc;
  }

 private:
  trainer::Config c_;
  std::optional<ChildProcess> proc_;
};
}  // namespace

void add_train_commands(CLI::App& app) {
  auto args = std::make_shared<ConfigArgs>();
  auto resume = std::make_shared<std::string>();
  auto nproc = std::make_shared<int>(0);
  auto dry_run = std::make_shared<bool>(false);
  CLI::App* train = app.add_subcommand("train", "run SPADE self-play (cold start + self-play steps)");
  add_config_options(train, *args);
  add_overwrite_option(train, *args);
  train->add_option("--resume", *resume,
                    "continue RUN_DIR from its newest checkpoint with its saved config (--set still applies, "
                    "except to the keys that made its files: tokenizer.*, model.*, corpus.*)");
  train->add_option("--nproc", *nproc,
                    "data parallel on this machine: start N ranks of spade (torchrun environment, Gloo "
                    "on CPU); torchrun and srun launch ranks too, see scripts/launch/")
      ->check(CLI::Range(1, 1024));
  train->add_flag("--dry-run", *dry_run,
                  "load and check the config (every key, the files it names), print the plan (steps, "
                  "environments, plays, tokens per step, model parameters) and exit; creates nothing");
  train->callback([args, resume, nproc, dry_run] {
    set_action([args, resume, nproc, dry_run] {
      if (*dry_run) {
        if (resume->empty()) return print_plan(load_config_args(*args), config_source(*args));
        trainer::Config c = trainer::load_run_config(*resume, args->overrides);
        c.seed_envs.dir = resolve_data_path(c.seed_envs.dir);
        return print_plan(c, *resume + "/config.yaml");
      }
      if (*nproc > 0) {
        if (std::getenv("RANK"))
          throw Error("train --nproc: this process is already rank " + std::string(std::getenv("RANK")) +
                      " of a launched job (drop --nproc under torchrun or srun)");
        // The same command without --nproc, once per rank.
        std::vector<std::string> rank_args = {"train"};
        for (const std::string& a : config_argv(*args)) rank_args.push_back(a);
        if (!resume->empty()) rank_args.insert(rank_args.end(), {"--resume", *resume});
        if (args->overwrite) rank_args.push_back("--overwrite");
        return trainer::launch_local_ranks(*nproc, rank_args);
      }
      if (resume->empty()) {
        const trainer::Config c = load_config_args(*args);
        DuelWatcher watcher(c);
        trainer::TrainOptions options = train_options(*args, true);
        options.on_run_open = watcher.starter();
        trainer::run_train(c, options, print_line);
        return watcher.wait();
      }
      if (!args->config.empty() || !args->overlays.empty() || !args->name.empty())
        throw Error("train --resume uses RUN_DIR/config.yaml: drop --config, --overlay and --name");
      if (args->overwrite)
        throw Error("train: --resume continues " + *resume + " and --overwrite replaces it; pass one of them");
      trainer::Config c = trainer::load_run_config(*resume, args->overrides);
      c.seed_envs.dir = resolve_data_path(c.seed_envs.dir);
      trainer::TrainOptions options;
      options.resume = true;
      DuelWatcher watcher(c);
      options.on_run_open = watcher.starter();
      trainer::run_train(c, options, print_line);
      return watcher.wait();
    });
  });

  auto sft_args = std::make_shared<ConfigArgs>();
  CLI::App* sft = app.add_subcommand("sft", "cold start only: supervised training on seed environments");
  add_config_options(sft, *sft_args);
  add_overwrite_option(sft, *sft_args);
  sft->callback([sft_args] {
    set_action([sft_args] {
      trainer::run_train(load_config_args(*sft_args), train_options(*sft_args, false), print_line);
      return 0;
    });
  });

  CLI::App* config = app.add_subcommand("config", "inspect run configs");
  config->require_subcommand(1);
  auto show_args = std::make_shared<ConfigArgs>();
  CLI::App* show = config->add_subcommand("show", "print the resolved config (defaults + file + --set)");
  add_config_options(show, *show_args);
  show->callback([show_args] {
    set_action([show_args] {
      std::printf("%s", trainer::to_yaml(load_config_args(*show_args, /*inputs=*/false)).c_str());
      return 0;
    });
  });

  auto check_args = std::make_shared<ConfigArgs>();
  CLI::App* check = config->add_subcommand(
      "check", "load and check a config (every key, the files it names) and print the run's plan; exit 1 "
               "naming the key on a bad one. Creates nothing");
  check->add_option("config", check_args->config, "run config (YAML)")->required();
  check->add_option("--overlay", check_args->overlays, "a YAML file of keys applied over the config (repeatable)");
  check->add_option("--set", check_args->overrides, "override a key, e.g. --set selfplay.steps=16 (repeatable)");
  check->callback([check_args] {
    set_action([check_args] { return print_plan(load_config_args(*check_args), check_args->config); });
  });
}

}  // namespace spade::apps
