// The plumbing shared by every subcommand (apps/commands.h): the stored action, the `bench` parent, and
// data paths. Torch-free, so that a bench linked without LibTorch (bench/sandbox_ab.sh) can use it.
#include "apps/commands.h"

#include <cstdio>
#include <filesystem>
#include <utility>

namespace spade::apps {
namespace {
std::function<int()> g_action;
}  // namespace

void set_action(std::function<int()> action) { g_action = std::move(action); }

CLI::App* bench_command(CLI::App& app) {
  try {
    return app.get_subcommand("bench");
  } catch (const CLI::OptionNotFound&) {
    CLI::App* bench = app.add_subcommand("bench", "benchmarks");
    bench->require_subcommand(1);
    return bench;
  }
}

int run_selected(CLI::App& app) {
  if (!g_action) {
    std::fprintf(stderr, "%s", app.help().c_str());
    return 2;
  }
  return g_action();
}

std::string resolve_data_path(const std::string& path) {
  namespace fs = std::filesystem;
  if (path.empty() || fs::path(path).is_absolute() || fs::exists(path)) return path;
  const fs::path in_source = fs::path(SPADE_SOURCE_DIR) / path;
  return fs::exists(in_source) ? in_source.string() : path;
}

}  // namespace spade::apps
