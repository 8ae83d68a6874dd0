// The `spade` command line itself, by the real binary: unknown commands, options and config keys name
// what was typed and the closest valid name (common/edit_distance.h: "trian" -> "train" is one swap),
// wrong types name the key and the type, --version, `spade help CMD`, defaults in every --help, and no
// issue numbers or source file names in any help text.
#include <gtest/gtest.h>

#include <torch/cuda.h>
#include <torch/version.h>

#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "common/atomic_file.h"
#include "tests/testing/test_util.h"

namespace {

spade::fixtures::CommandResult spade_cmd(const std::string& args) {
  return spade::fixtures::run_command(std::string(SPADE_BIN) + " " + args + " 2>&1");
}

spade::fixtures::CommandResult spade_stdout(const std::string& args) {
  return spade::fixtures::run_command(std::string(SPADE_BIN) + " " + args + " 2>/dev/null");
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// The subcommand names a --help text lists ("Subcommands:" section, one "  name  description" a line).
std::vector<std::string> subcommands_in(const std::string& help) {
  std::vector<std::string> names;
  std::istringstream in(help);
  bool inside = false;
  for (std::string line; std::getline(in, line);) {
    if (line == "Subcommands:") {
      inside = true;
      continue;
    }
    if (!inside) continue;
    if (line.empty()) break;
    if (line.size() > 2 && line[0] == ' ' && line[1] == ' ' && line[2] != ' ')
      names.push_back(line.substr(2, line.find(' ', 2) - 2));
  }
  return names;
}

// Every command's words ("", "train", "duel match", ...) with its --help text, walked from `spade --help`.
std::vector<std::pair<std::string, std::string>> every_help() {
  std::vector<std::pair<std::string, std::string>> out;
  std::vector<std::string> todo = {""};
  while (!todo.empty()) {
    const std::string words = todo.back();
    todo.pop_back();
    const auto r = spade_stdout(words + " --help");
    EXPECT_EQ(r.rc, 0) << words << "\n" << r.out;
    out.emplace_back(words, r.out);
    for (const std::string& sub : subcommands_in(r.out)) todo.push_back(words.empty() ? sub : words + " " + sub);
  }
  return out;
}

}  // namespace

TEST(Cli, UnknownCommandSuggestsTheClosest) {
  auto r = spade_cmd("trian");
  EXPECT_EQ(r.rc, 2) << r.out;
  EXPECT_TRUE(has(r.out, "error: unknown command 'trian'; did you mean 'train'?")) << r.out;
  r = spade_cmd("duel tournamnt");  // one deletion from "tournament"
  EXPECT_EQ(r.rc, 2) << r.out;
  EXPECT_TRUE(has(r.out, "error: unknown command 'duel tournamnt'; did you mean 'duel tournament'?")) << r.out;
  r = spade_cmd("frobnicate");  // nothing within a third of its length: no guess
  EXPECT_EQ(r.rc, 2) << r.out;
  EXPECT_TRUE(has(r.out, "error: unknown command 'frobnicate'")) << r.out;
  EXPECT_FALSE(has(r.out, "did you mean")) << r.out;
  r = spade_cmd("duel");
  EXPECT_EQ(r.rc, 2) << r.out;
  EXPECT_TRUE(has(r.out, "'spade duel' needs a command: one of rate, report,")) << r.out;
}

TEST(Cli, UnknownOptionSuggestsAnOptionOfThatCommand) {
  auto r = spade_cmd("train --confg x.yaml");
  EXPECT_EQ(r.rc, 2) << r.out;
  EXPECT_TRUE(has(r.out, "error: unknown option '--confg' for 'spade train'; did you mean '--config'?")) << r.out;
  EXPECT_TRUE(has(r.out, "run 'spade train --help' for usage")) << r.out;
  r = spade_cmd("corpus build --ot x.jsonl");
  EXPECT_EQ(r.rc, 2) << r.out;
  EXPECT_TRUE(has(r.out, "error: unknown option '--ot' for 'spade corpus build'; did you mean '--out'?")) << r.out;
  r = spade_cmd("envs play --sed=3 x.py");  // the value after '=' is not part of the name
  EXPECT_EQ(r.rc, 2) << r.out;
  EXPECT_TRUE(has(r.out, "error: unknown option '--sed' for 'spade envs play'; did you mean '--seed'?")) << r.out;
  // Per command: `generate` has no --config, and nothing of its own is near it.
  r = spade_cmd("generate --config x.yaml");
  EXPECT_EQ(r.rc, 2) << r.out;
  EXPECT_TRUE(has(r.out, "error: unknown option '--config' for 'spade generate'")) << r.out;
  EXPECT_FALSE(has(r.out, "did you mean")) << r.out;
  r = spade_cmd("--verison");
  EXPECT_EQ(r.rc, 2) << r.out;
  EXPECT_TRUE(has(r.out, "error: unknown option '--verison' for 'spade'; did you mean '--version'?")) << r.out;
  // A value CLI11 cannot convert: the option and what it takes.
  r = spade_cmd("envs play --seed abc x.py");
  EXPECT_EQ(r.rc, 2) << r.out;
  EXPECT_TRUE(has(r.out, "error: spade envs play: --seed expects an integer, got 'abc'")) << r.out;
}

TEST(Cli, ConfigKeysFromSetAreCheckedWithSuggestions) {
  auto r = spade_cmd("config show --set selfplay.stpes=2");
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_TRUE(has(r.out, "error: --set selfplay.stpes=2: unknown config key 'selfplay.stpes'; did you mean "
                         "'selfplay.steps'?"))
      << r.out;
  r = spade_cmd("config show --set selfplay.steps=abc");
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_TRUE(has(r.out, "error: --set selfplay.steps=abc: selfplay.steps expects an integer, got 'abc'")) << r.out;
  r = spade_cmd("config show --set selfplay.steps=3");
  EXPECT_EQ(r.rc, 0) << r.out;
  EXPECT_TRUE(has(r.out, "steps: 3")) << r.out;
}

TEST(Cli, VersionNamesSpadeAndItsLibTorch) {
  // The expected version is read from CMakeLists.txt's project() here, and LibTorch's from the headers
  // this test is compiled against (the same install the binary was built with).
  const std::string cmake = spade::read_file(std::string(SPADE_SOURCE_DIR) + "/CMakeLists.txt");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(cmake, m, std::regex(R"(project\(spade VERSION ([0-9.]+))"))) << "no project(VERSION)";
  const auto r = spade_cmd("--version");
  EXPECT_EQ(r.rc, 0) << r.out;
  EXPECT_EQ(r.out.substr(0, r.out.find('\n')), "spade " + m[1].str()) << r.out;
  EXPECT_TRUE(has(r.out, std::string("\nLibTorch ") + TORCH_VERSION)) << r.out;
  if (torch::cuda::is_available())
    EXPECT_TRUE(has(r.out, " with CUDA")) << r.out;  // a visible GPU: this LibTorch has CUDA
  else
    EXPECT_TRUE(has(r.out, ", CPU only (built without CUDA)") || has(r.out, "0 GPUs visible")) << r.out;
}

TEST(Cli, HelpCommandIsTheCommandsHelp) {
  for (const std::string words : {"duel match", "train", "bench step", "corpus build"}) {
    const auto a = spade_stdout("help " + words);
    const auto b = spade_stdout(words + " --help");
    EXPECT_EQ(a.rc, 0) << words;
    EXPECT_EQ(b.rc, 0) << words;
    EXPECT_EQ(a.out, b.out) << words;
    EXPECT_TRUE(has(a.out, "Usage: spade " + words + " [OPTIONS]")) << a.out;
  }
  EXPECT_EQ(spade_stdout("help").out, spade_stdout("--help").out);
  const auto r = spade_cmd("help duel tournamnt");
  EXPECT_EQ(r.rc, 2) << r.out;
  EXPECT_TRUE(has(r.out, "error: unknown command 'duel tournamnt'; did you mean 'duel tournament'?")) << r.out;
}

TEST(Cli, EveryHelpShowsDefaultsAndNoIssueNumbersOrSourceFiles) {
  const auto helps = every_help();
  std::set<std::string> walked;
  for (const auto& [words, help] : helps) walked.insert(words);
  // The walk reached every level (a command, a nested command, the help command).
  for (const char* w : {"train", "duel", "duel bank generate", "bench step", "envs play", "help"})
    EXPECT_TRUE(walked.count(w)) << w;
  // An option taking a number or a boolean always has a default value, so its line shows it: "--seed INT=0"
  // (Debian 12's CLI11 2.3 writes the default after '='; with a validator, "--turns INT:INT in [1 -
  // 2147483647]=3"); Debian 13's CLI11 2.4 writes it in brackets: "--seed INT [0]".
  const std::regex bracket_default(R"( \[[^\] ]*\]$)");
  const std::regex numeric_option(R"(^  (?:-\w,)?--[\w-]+ ((?:INT|UINT|FLOAT|BOOLEAN)\S*(?: \S+)*))");
  const std::regex forbidden(R"(issue|\.cpp\b|\.h\b|#[0-9])", std::regex::icase);
  for (const auto& [words, help] : helps) {
    std::istringstream in(help);
    for (std::string line; std::getline(in, line);) {
      std::smatch m;
      if (std::regex_search(line, m, numeric_option))
        EXPECT_TRUE(m[1].str().find('=') != std::string::npos || std::regex_search(m[1].str(), bracket_default))
            << "spade " << words << " --help: no default shown in\n" << line;
      EXPECT_FALSE(std::regex_search(line, forbidden)) << "spade " << words << " --help:\n" << line;
      EXPECT_EQ(line.find("=[]"), std::string::npos) << "spade " << words << " --help: an empty list as a default\n"
                                                     << line;
    }
  }
  // A few defaults by value (each from its option's declaration in apps/).
  // {option and type, default}, shown as "OPTION TYPE=VALUE " (CLI11 2.3) or "OPTION TYPE [VALUE]" (2.4).
  const std::map<std::string, std::pair<std::string, std::string>> defaults = {
      {"corpus build", {"--max-words INT", "6000"}},
      {"envs play", {"--max-turns INT", "25"}},
      {"bench step", {"--shape TEXT", "auto"}},
      {"duel rate", {"--seed UINT", "42"}},
      {"export", {"--max-shard-size UINT:POSITIVE", "5000000000"}}};
  for (const auto& [words, help] : helps)
    if (defaults.count(words)) {
      const auto& [option, value] = defaults.at(words);
      EXPECT_TRUE(has(help, option + "=" + value + " ") || has(help, option + "=" + value + "\n") ||
                  has(help, option + " [" + value + "]"))
          << words << "\n" << help;
    }
}

TEST(Cli, LibTorchErrorsArePrintedWithoutTheirBacktrace) {
  // torch::Device("gpu0") fails a TORCH_CHECK: a c10::Error whose what() carries LibTorch's C++ backtrace
  // ("Exception raised from ... frame #0: ..."); the top-level handler prints what_without_backtrace().
  const auto r = spade_cmd("bench turns --device gpu0 --sequences 1 --turns 1");
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_EQ(r.out.rfind("error: ", 0), 0u) << r.out;
  EXPECT_TRUE(has(r.out, "gpu0")) << r.out;
  EXPECT_FALSE(has(r.out, "Exception raised from")) << r.out;
  EXPECT_FALSE(has(r.out, "frame #")) << r.out;
}
