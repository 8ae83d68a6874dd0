// The run-config options shared by `spade train`, `sft`, `config show|check` and `ablate`: a base config
// (--config, default the embedded configs/games-tiny.yaml), overlays on it (--overlay, e.g.
// configs/ablations/*.yaml, later ones win), --set KEY=VALUE and --name. Not thread-safe (CLI parsing).
#pragma once
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "trainer/config.h"

namespace spade::apps {

struct ConfigArgs {
  std::string config;                 // "" = the embedded default
  std::vector<std::string> overlays;  // applied in order over the base
  std::vector<std::string> overrides; // --set, after every file
  std::string name;                   // --name: run.name
  bool overwrite = false;
};

/// --config, --overlay, --set and --name on `cmd`.
void add_config_options(CLI::App* cmd, ConfigArgs& args);

/// The base's name in messages: the --config path or the embedded default's name.
std::string config_source(const ConfigArgs& args);

/// The files `args` reads (the base and the overlays): inputs a run must never replace.
std::vector<std::string> config_inputs(const ConfigArgs& args);

/// The config of `args` (trainer::parse_config_layers: base, overlays, --set, --name), checked, with
/// seed_envs.dir resolved against the source tree. `inputs`: also check that the files and checkpoints
/// it names exist (trainer/config_checks.h check_inputs). Throws spade::Error naming the file and key.
trainer::Config load_config_args(const ConfigArgs& args, bool inputs = true);

/// The arguments that make a `spade` subcommand load the same config: "--config F --overlay O ...
/// --set K=V ... --name N" (for launch lines and ranks).
std::vector<std::string> config_argv(const ConfigArgs& args);

}  // namespace spade::apps
