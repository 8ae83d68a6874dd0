// `spade envs play FILE.py`: play an environment program in the terminal, through the same sandbox and
// lenient wrapper (envsandbox/game.h) the agent plays through. Each input line is one action, sent as
// is (type \boxed{...} yourself, or use --box to wrap each line). A line starting with ':' is a command
// of this player and never reaches the game (:help lists them; an unknown one is an error that names it).
// When an episode ends (terminated or truncated) the player says so and sends nothing more until :reset.
// --tool-use (a ToolUseEnv program): the tools are listed after every reset (and by :tools); a line
// `NAME` or `NAME {"arg": value, ...}` calls tool NAME, sent as the agent's call would be
// (<tool_call>{"name": NAME, "arguments": {...}}</tool_call>); a line starting with '<' (e.g.
// <answer>done</answer>) is sent as typed.
#include <cstdio>
#include <iostream>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "apps/commands.h"
#include "common/atomic_file.h"
#include "common/edit_distance.h"
#include "common/error.h"
#include "common/strings.h"
#include "common/terminal_text.h"
#include "envsandbox/game.h"
#include "envsandbox/sandbox.h"
#include "rollout/tool_calls.h"

namespace spade::apps {

namespace {

// The player's commands and what :help says of them.
const std::vector<std::pair<std::string, std::string>>& play_commands() {
  static const std::vector<std::pair<std::string, std::string>> commands = {
      {":help", "list these commands"},
      {":solution", "print the program's solution() actions"},
      {":tools", "list the tools (--tool-use)"},
      {":reset", "start a new episode (:reset SEED for another seed)"},
      {":quit", "leave (end of input too)"},
  };
  return commands;
}

}  // namespace

void add_envs_play_command(CLI::App& envs) {
  struct Args {
    std::string file;
    int64_t seed = 0;
    int max_turns = 25;
    bool box = false;
    bool tool_use = false;
  };
  auto args = std::make_shared<Args>();
  CLI::App* play = envs.add_subcommand(
      "play", "play an environment program in the terminal: one action per line, :help for the player's commands");
  play->add_option("file", args->file, "Python environment file")->required();
  play->add_option("--seed", args->seed, "reset seed");
  play->add_option("--max-turns", args->max_turns, "max_turns cap passed to the constructor");
  play->add_flag("--box", args->box, "wrap each typed line as \\boxed{line}");
  play->add_flag("--tool-use", args->tool_use,
                 "a tool-use program: list its tools; a line NAME {json args} calls tool NAME, a line starting "
                 "with '<' (e.g. <answer>done</answer>) is sent as typed")
      ->excludes("--box");
  play->callback([args] {
    set_action([args] {
      std::string source;
      try {
        source = read_file(args->file);
      } catch (const Error& e) {
        std::fprintf(stderr, "error: %s\n", e.what());
        return 2;
      }
      envsandbox::EnvServer server;
      std::string reason, detail;
      // Everything the program supplies is escaped before it reaches the terminal (issue 24);
      // observations keep their line breaks and tabs (boards, tables).
      auto one_line = [](const std::string& text) { return escape_for_terminal(text); };
      auto multi_line = [](const std::string& text) { return escape_for_terminal(text, true); };
      auto game = envsandbox::Game::open(server, source, args->max_turns, &reason, &detail);
      if (!game) {
        std::printf("cannot load %s: %s -- %s\n", one_line(args->file).c_str(), reason.c_str(), one_line(detail).c_str());
        return 1;
      }
      // --tool-use: the tools of the current episode, one line each: NAME(param: type, ...) -- description.
      auto print_tools = [&]() -> bool {
        auto tools = game->tools(&reason, &detail);
        if (!tools) {
          std::printf("cannot read the tools: %s -- %s\n", reason.c_str(), one_line(detail).c_str());
          return false;
        }
        std::printf("tools (call one as: NAME {\"arg\": value, ...}; answer with <answer>...</answer>):\n");
        for (const auto& t : *tools) {
          const auto& f = t.at("function");
          std::string params;
          if (f.contains("parameters") && f["parameters"].contains("properties"))
            for (const auto& [k, v] : f["parameters"]["properties"].items())
              params += (params.empty() ? "" : ", ") + k + ": " + (v.is_object() ? v.value("type", "any") : "any");
          std::printf("  %s(%s) -- %s\n", one_line(f.value("name", "")).c_str(), one_line(params).c_str(),
                      one_line(f.value("description", "")).c_str());
        }
        return true;
      };
      // --tool-use: the action a typed line stands for, or "" (with the reason printed) when it stands for none.
      auto tool_action = [&](const std::string& line) -> std::string {
        const std::string text = trim(line);
        if (starts_with(text, "<")) return text;
        const size_t space = text.find_first_of(" \t{");
        rollout::ToolCall call;
        call.name = text.substr(0, space);
        const std::string rest = space == std::string::npos ? "" : trim(text.substr(space));
        call.arguments = rest.empty() ? nlohmann::json::object() : nlohmann::json::parse(rest, nullptr, false);
        if (call.name.empty() || !call.arguments.is_object()) {
          std::printf("error: type NAME or NAME {\"arg\": value, ...} (a JSON object) to call a tool, or a line "
                      "starting with '<' such as <answer>done</answer>\n");
          return "";
        }
        return rollout::tool_call_action(call);
      };
      int turn = 0;
      double total = 0;
      bool over = false;  // the episode ended: no action is sent until :reset
      auto start = [&](int64_t seed) -> bool {
        auto obs = game->reset(seed, &reason, &detail);
        if (!obs) {
          std::printf("reset failed: %s -- %s\n", reason.c_str(), one_line(detail).c_str());
          return false;
        }
        std::printf("=== episode (seed %lld, max_turns %lld) ===\n%s\n", static_cast<long long>(seed),
                    static_cast<long long>(game->instance().max_turns().value_or(-1)), multi_line(*obs).c_str());
        turn = 0;
        total = 0;
        over = false;
        return !args->tool_use || print_tools();
      };
      auto episode_over = [&] {
        std::printf("episode over (reward %+.3f); :reset to play again, :quit to leave\n", total);
      };
      if (!start(args->seed)) return 1;
      std::vector<std::string> names;
      for (const auto& [name, _] : play_commands()) names.push_back(name);
      for (std::string line;;) {
        std::printf("> ");
        std::fflush(stdout);
        if (!std::getline(std::cin, line)) break;
        if (starts_with(line, ":")) {  // a player command, never an action
          const std::string word = line.substr(0, line.find(' '));
          const std::string rest = trim(line.size() > word.size() ? line.substr(word.size()) : "");
          if (word == ":quit") break;
          if (word == ":help") {
            for (const auto& [name, what] : play_commands()) std::printf("  %-10s %s\n", name.c_str(), what.c_str());
            std::printf("  any other line is an action for the game%s\n", args->box ? " (sent as \\boxed{line})" : "");
          } else if (word == ":solution") {
            auto actions = game->solution(&reason, &detail);
            if (actions.empty()) std::printf("(no solution: %s %s)\n", reason.c_str(), one_line(detail).c_str());
            for (const std::string& a : actions) std::printf("  %s\n", one_line(a).c_str());
          } else if (word == ":tools") {
            if (args->tool_use) print_tools();
            else std::printf("error: :tools needs --tool-use (a tool-use program)\n");
          } else if (word == ":reset") {
            int64_t seed = args->seed;
            if (!rest.empty()) {
              try {
                size_t used = 0;
                seed = std::stoll(rest, &used);
                if (used != rest.size()) throw std::invalid_argument(rest);
              } catch (const std::exception&) {
                std::printf("error: :reset takes an integer seed, got '%s'\n", rest.c_str());
                continue;
              }
            }
            if (!start(seed)) return 1;
          } else {
            std::printf("error: unknown command '%s'%s (:help lists the commands; a line starting with ':' is never "
                        "sent to the game)\n",
                        word.c_str(), did_you_mean(word, names).c_str());
          }
          continue;
        }
        if (over) {
          episode_over();
          continue;
        }
        const std::string action = args->tool_use ? tool_action(line) : args->box ? "\\boxed{" + line + "}" : line;
        if (action.empty()) continue;
        envsandbox::GameStep s = game->step(action);
        total += s.reward;
        std::printf("%s\n  [turn %d  reward %+.3f  total %+.3f%s%s]\n", multi_line(s.obs).c_str(), ++turn, s.reward, total,
                    s.terminated ? "  terminated" : "", s.truncated ? "  truncated" : "");
        if (s.broken()) {
          std::printf("the environment process failed: %s -- %s\n", envsandbox::call_status_name(s.failure), one_line(s.detail).c_str());
          return 1;
        }
        if (s.terminated || s.truncated) {
          over = true;
          episode_over();
        }
      }
      return 0;
    });
  });
}

}  // namespace spade::apps
