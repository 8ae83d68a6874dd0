// Subcommands of `spade`. Each add_* registers its subcommands; the chosen one stores its action,
// which run_selected() runs and whose value is the process exit code.
#pragma once
#include <CLI/CLI.hpp>

#include <functional>
#include <string>

namespace spade::apps {

void add_train_commands(CLI::App& app);     // train, sft, config show
void add_corpus_commands(CLI::App& app);    // corpus build
void add_envs_commands(CLI::App& app);      // envs check
void add_generate_command(CLI::App& app);   // generate

/// Sets the action of the parsed subcommand (called from the subcommands' callbacks).
void set_action(std::function<int()> action);
/// Runs the stored action; returns its exit code.
int run_selected(CLI::App& app);

/// Resolves a data path from the config: as given if it exists relative to the working directory,
/// else relative to the source tree the binary was built from.
std::string resolve_data_path(const std::string& path);

}  // namespace spade::apps
