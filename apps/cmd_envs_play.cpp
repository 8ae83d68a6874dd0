// `spade envs play FILE.py`: play an environment program in the terminal, through the same sandbox and
// lenient wrapper (envsandbox/game.h) the agent plays through. Each input line is one action, sent as
// is (type \boxed{...} yourself, or use --box to wrap each line). ":solution" prints the program's
// solution(), ":reset" starts a new episode, ":quit" (or end of input) stops.
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>

#include "apps/commands.h"
#include "common/atomic_file.h"
#include "common/error.h"
#include "common/terminal_text.h"
#include "envsandbox/game.h"
#include "envsandbox/sandbox.h"

namespace spade::apps {

void add_envs_play_command(CLI::App& envs) {
  struct Args {
    std::string file;
    int64_t seed = 0;
    int max_turns = 25;
    bool box = false;
  };
  auto args = std::make_shared<Args>();
  CLI::App* play = envs.add_subcommand("play", "play an environment program in the terminal (one action per line)");
  play->add_option("file", args->file, "Python environment file")->required();
  play->add_option("--seed", args->seed, "reset seed (default 0)");
  play->add_option("--max-turns", args->max_turns, "max_turns cap passed to the constructor (default 25)");
  play->add_flag("--box", args->box, "wrap each typed line as \\boxed{line}");
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
      auto start = [&]() -> bool {
        auto obs = game->reset(args->seed, &reason, &detail);
        if (!obs) {
          std::printf("reset failed: %s -- %s\n", reason.c_str(), one_line(detail).c_str());
          return false;
        }
        std::printf("=== episode (seed %lld, max_turns %lld) ===\n%s\n", static_cast<long long>(args->seed),
                    static_cast<long long>(game->instance().max_turns().value_or(-1)), multi_line(*obs).c_str());
        return true;
      };
      if (!start()) return 1;
      double total = 0;
      std::string line;
      for (int turn = 1;; ++turn) {
        std::printf("> ");
        std::fflush(stdout);
        if (!std::getline(std::cin, line) || line == ":quit") break;
        if (line == ":solution") {
          auto actions = game->solution(&reason, &detail);
          if (actions.empty()) std::printf("(no solution: %s %s)\n", reason.c_str(), one_line(detail).c_str());
          for (const std::string& a : actions) std::printf("  %s\n", one_line(a).c_str());
          --turn;
          continue;
        }
        if (line == ":reset") {
          if (!start()) return 1;
          turn = 0;
          total = 0;
          continue;
        }
        envsandbox::GameStep s = game->step(args->box ? "\\boxed{" + line + "}" : line);
        total += s.reward;
        std::printf("%s\n  [turn %d  reward %+.3f  total %+.3f%s%s]\n", multi_line(s.obs).c_str(), turn, s.reward, total,
                    s.terminated ? "  terminated" : "", s.truncated ? "  truncated" : "");
        if (!s.failure.empty()) {
          std::printf("the environment process failed: %s -- %s\n", s.failure.c_str(), one_line(s.detail).c_str());
          return 1;
        }
        if (s.terminated || s.truncated) {
          std::printf("=== episode over (type :reset to play again, :quit to stop) ===\n");
        }
      }
      return 0;
    });
  });
}

}  // namespace spade::apps
