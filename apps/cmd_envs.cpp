#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>

#include "apps/commands.h"
#include "common/atomic_file.h"
#include "common/error.h"
#include "common/terminal_text.h"
#include "envsandbox/sandbox.h"
#include "envsandbox/repair.h"
#include "envsandbox/validate.h"

namespace spade::apps {

void add_envs_play_command(CLI::App& envs);  // apps/cmd_envs_play.cpp

void add_envs_commands(CLI::App& app) {
  CLI::App* envs = app.add_subcommand("envs", "environment programs");
  envs->require_subcommand(1);
  struct Args {
    std::vector<std::string> files;
    bool json = false;
    bool tool_use = false;
  };
  auto args = std::make_shared<Args>();
  CLI::App* check = envs->add_subcommand(
      "check", "run the validation gates on environment programs; exit 0 all admitted, 1 any rejected, 2 usage");
  check->add_option("files", args->files, "Python environment files")->required();
  check->add_flag("--json", args->json, "print one JSON report per file");
  check->add_flag("--tool-use", args->tool_use,
                  "tool-use programs: also check the tool schemas and the deterministic reset gate (seeds 0, 1, 2)");
  check->callback([args] {
    set_action([args] {
      std::vector<std::string> sources;
      for (const std::string& f : args->files) {
        try {
          sources.push_back(read_file(f));
        } catch (const Error& e) {
          std::fprintf(stderr, "error: %s\n", e.what());
          return 2;
        }
      }
      envsandbox::EnvServer server;
      bool all = true;
      nlohmann::json reports = nlohmann::json::array();
      for (size_t i = 0; i < sources.size(); ++i) {
        envsandbox::ValidateOptions options;
        options.tool_use = args->tool_use;
        envsandbox::ValidationReport r = envsandbox::validate_game(server, sources[i], options);
        all &= r.admitted;
        if (args->json) {
          nlohmann::json j = r.to_json();
          j["file"] = args->files[i];
          reports.push_back(j);
          continue;
        }
        // Program-supplied text (exception messages in the details) is escaped, as --json does: it must
        // not move the cursor, forge report lines or reach the window title or clipboard (issue 24).
        auto safe = [](const std::string& text) { return escape_for_terminal(text); };
        std::printf("%s: %s%s%s\n", safe(args->files[i]).c_str(), r.admitted ? "ADMITTED" : "REJECTED",
                    r.admitted ? "" : " -- ", r.admitted ? "" : safe(r.reason).c_str());
        for (const envsandbox::GateResult& g : r.gates)
          std::printf("  %-30s %-5s %8.1f ms  %s%s%s\n", g.gate.c_str(), g.verdict.c_str(), g.seconds * 1e3,
                      safe(g.reason).c_str(), g.detail.empty() ? "" : ": ", safe(g.detail).c_str());
        if (!r.admitted && !r.detail.empty()) std::printf("  detail: %s\n", safe(r.detail).c_str());
      }
      if (args->json) std::printf("%s\n", (reports.size() == 1 ? reports[0] : reports).dump(2).c_str());
      return all ? 0 : 1;
    });
  });
  add_envs_play_command(*envs);
}

}  // namespace spade::apps
