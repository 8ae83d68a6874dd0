// Subcommands of `spade`. Each add_* registers its subcommands; the chosen one stores its action,
// which run_selected() runs and whose value is the process exit code.
#pragma once
#include <CLI/CLI.hpp>

#include <functional>
#include <string>

namespace spade::apps {

void add_train_commands(CLI::App& app);     // train, sft, config show, config check
void add_corpus_commands(CLI::App& app);    // corpus build
void add_envs_commands(CLI::App& app);      // envs check
void add_generate_command(CLI::App& app);   // generate
void add_export_command(CLI::App& app);     // export (apps/cmd_export.cpp)
void add_bench_sandbox_command(CLI::App& app);  // bench sandbox (apps/cmd_bench_sandbox.cpp)
CLI::App* add_duel_commands(CLI::App& app);  // duel (found or created) + duel rate, bench duel; returns duel (apps/cmd_duel_rate.cpp)
void add_duel_protocol_commands(CLI::App* duel);  // duel doctor | repos setup | bank generate | match (apps/cmd_duel.cpp)
void add_duel_board_commands(CLI::App* duel);  // duel enter | import | export (apps/cmd_duel_board.cpp)
void add_duel_watch_command(CLI::App* duel);   // duel watch (apps/cmd_duel_watch.cpp)
void add_score_command(CLI::App& app);     // score (apps/cmd_score.cpp)
void add_report_command(CLI::App& app);    // report (apps/cmd_report.cpp)
void add_eval_command(CLI::App& app);      // eval (apps/cmd_eval.cpp)
void add_ablate_command(CLI::App& app);    // ablate (apps/cmd_ablate.cpp)
void add_bench_sampler_command(CLI::App& app);  // bench sampler (apps/cmd_bench_sampler.cpp)
void add_bench_trainer_command(CLI::App& app);  // bench trainer (apps/cmd_bench_trainer.cpp)
void add_bench_step_command(CLI::App& app);  // bench step (apps/cmd_bench_step.cpp)
void add_bench_turns_command(CLI::App& app);  // bench turns (apps/cmd_bench_turns.cpp)
void add_serve_command(CLI::App& app);     // serve (apps/cmd_serve.cpp)
void add_bench_serve_command(CLI::App& app);  // bench serve (apps/cmd_bench_serve.cpp)

/// The `bench` subcommand shared by the add_bench_* functions: found, or created by the first caller.
CLI::App* bench_command(CLI::App& app);

/// Sets the action of the parsed subcommand (called from the subcommands' callbacks).
void set_action(std::function<int()> action);
/// Runs the stored action; returns its exit code.
int run_selected(CLI::App& app);

/// Resolves a data path from the config: as given if it exists relative to the working directory,
/// else relative to the source tree the binary was built from.
std::string resolve_data_path(const std::string& path);

}  // namespace spade::apps
