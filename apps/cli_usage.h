// Usage of the `spade` command line: its errors, worded like a compiler's (what was typed, for which
// command, and the valid name closest to it, by common/edit_distance.h), and its help texts. Built on
// CLI11's parse state, error types and formatter; main.cpp uses them. Not thread-safe (reads the
// parsed CLI::App).
#pragma once
#include <CLI/CLI.hpp>

#include <string>
#include <vector>

namespace spade::apps {

/// CLI11's help formatter, with every option's default value shown ("--seed INT=0"; main.cpp captures
/// them) except an empty list's "=[]".
class HelpFormatter : public CLI::Formatter {
 public:
  std::string make_option_opts(const CLI::Option* opt) const override;
};

/// "spade", "spade duel", "spade duel match": the words that run `cmd`.
std::string command_path(const CLI::App& cmd);

/// The deepest command `root`'s last parse reached: root, or the last subcommand it selected.
const CLI::App& parsed_command(const CLI::App& root);

/// The one-line message for a failed parse of `root` (after root.parse threw `e`; not for --help or
/// --version, whose exit code is 0):
///   - an argument no command took: "unknown command 'trian'; did you mean 'train'?",
///     "unknown command 'duel tournamnt'; did you mean 'duel tournament'?",
///     "unknown option '--confg' for 'spade train'; did you mean '--config'?" (the options of that
///     command only), "unexpected argument 'x' for 'spade train'" (a command without positionals);
///   - a missing subcommand: "'spade duel' needs a command: one of rate, report, ...";
///   - a value of the wrong type: "spade envs play: --seed expects an integer, got 'abc'";
///   - anything else: CLI11's message, prefixed with the command it concerns.
std::string explain_parse_error(const CLI::App& root, const CLI::ParseError& e);

/// The command `words` name below `root` ({"duel", "match"} -> spade duel match; {} -> root), or nullptr
/// with `*error` = "unknown command 'trian'; did you mean 'train'?" when a word names no subcommand of
/// the command before it.
const CLI::App* find_command(const CLI::App& root, const std::vector<std::string>& words, std::string* error);

/// The text `spade WORDS --help` prints for `cmd` (CLI11's formatter, with the command's full path in
/// its usage line), whatever the last parse selected.
std::string help_text(const CLI::App& cmd);

}  // namespace spade::apps
