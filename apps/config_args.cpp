#include "apps/config_args.h"

#include "apps/commands.h"
#include "common/atomic_file.h"
#include "embedded_config.h"
#include "trainer/config_checks.h"

namespace spade::apps {

void add_config_options(CLI::App* cmd, ConfigArgs& args) {
  cmd->add_option("--config", args.config, "run config (YAML); default: the embedded configs/games-tiny.yaml");
  cmd->add_option("--overlay", args.overlays,
                  "a YAML file of keys applied over the config, e.g. configs/ablations/no_corpus.yaml "
                  "(repeatable; later ones win; --set applies after them)");
  cmd->add_option("--set", args.overrides, "override a key, e.g. --set selfplay.steps=16 (repeatable)");
  cmd->add_option("--name", args.name, "run name (run.name): outputs go to <run.out_dir>/<name>/");
}

std::string config_source(const ConfigArgs& args) { return args.config.empty() ? kDefaultConfigName : args.config; }

std::vector<std::string> config_inputs(const ConfigArgs& args) {
  std::vector<std::string> out = args.overlays;
  if (!args.config.empty()) out.insert(out.begin(), args.config);
  return out;
}

trainer::Config load_config_args(const ConfigArgs& args, bool inputs) {
  std::vector<std::string> overrides = args.overrides;
  if (!args.name.empty()) overrides.push_back("run.name=" + args.name);
  std::vector<trainer::ConfigLayer> layers;
  layers.push_back(args.config.empty() ? trainer::ConfigLayer{kDefaultConfig, kDefaultConfigName}
                                       : trainer::ConfigLayer{read_file(args.config), args.config});
  for (const std::string& overlay : args.overlays) layers.push_back({read_file(overlay), overlay});
  trainer::Config c = trainer::parse_config_layers(layers, overrides);
  c.seed_envs.dir = resolve_data_path(c.seed_envs.dir);
  if (inputs) trainer::check_inputs(c, config_source(args));
  return c;
}

std::vector<std::string> config_argv(const ConfigArgs& args) {
  std::vector<std::string> out;
  if (!args.config.empty()) out.insert(out.end(), {"--config", args.config});
  for (const std::string& o : args.overlays) out.insert(out.end(), {"--overlay", o});
  for (const std::string& o : args.overrides) out.insert(out.end(), {"--set", o});
  if (!args.name.empty()) out.insert(out.end(), {"--name", args.name});
  return out;
}

}  // namespace spade::apps
