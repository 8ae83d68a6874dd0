// `spade duel ...`: the SWE-Duel protocol commands (the `duel` subcommand and `rate` live in
// apps/cmd_duel_rate.cpp; this file adds to it):
//   spade duel doctor [--spec FILE.yaml]... [--work DIR]
//   spade duel repos setup --spec FILE.yaml... [--work DIR]
//   spade duel bank generate --participant ID --script SCRIPTS.json --spec FILE.yaml... [--work DIR]
//                            [--bank FILE.sqlite] [--slots N] [--attempts N]
//   spade duel match --a ID --a-script A.json --b ID --b-script B.json --spec FILE.yaml... [--work DIR]
//                    [--bank FILE.sqlite] [--turns N] [--out match.json]
// Scripts are replay agents (evaldual/protocol.h ScriptedAgent): a JSON object mapping session keys
// ("REPO/red_a/s1/a1", "REPO/blue/RED/s1", ...) to lists of shell commands. Model-backed agents come
// with the OpenAI-compatible client.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <filesystem>
#include <memory>

#include "apps/commands.h"
#include "common/atomic_file.h"
#include "common/error.h"
#include "evaldual/adapters.h"
#include "evaldual/duel_match.h"
#include "evaldual/protocol.h"
#include "evaldual/repo_spec.h"
#include "evaldual/task_bank.h"
#include "evaldual/workspace_sandbox.h"

using nlohmann::json;
namespace ev = spade::evaldual;

namespace spade::apps {
namespace {

struct Common {
  std::vector<std::string> specs;
  std::string work = "runs/duel";
};

void add_common(CLI::App* cmd, Common* c, bool specs_required) {
  auto* o = cmd->add_option("--spec", c->specs, "repository spec YAML (repeatable; evaldual/repo_spec.h)");
  if (specs_required) o->required();
  cmd->add_option("--work", c->work, "work directory: prepared repositories, workspaces, bank (default runs/duel)");
}

std::vector<ev::PreparedRepo> prepared(const Common& c) {
  std::vector<ev::PreparedRepo> repos;
  for (const auto& s : c.specs) {
    ev::RepoSpec spec = ev::load_repo_spec(s);
    ev::PreparedRepo p = ev::load_prepared_repo(c.work + "/repos", spec.name);
    p.spec = spec;
    repos.push_back(p);
  }
  return repos;
}

std::unique_ptr<ev::ScriptedAgent> load_script(const std::string& path) {
  json j;
  try {
    j = json::parse(read_file(path));
  } catch (const json::parse_error& e) {
    throw Error(path + ": not valid JSON (byte " + std::to_string(e.byte) + "): " + e.what());
  }
  if (!j.is_object()) throw Error(path + ": a script file is a JSON object {session key: [commands]}");
  auto agent = std::make_unique<ev::ScriptedAgent>();
  for (const auto& [key, cmds] : j.items()) {
    if (!cmds.is_array()) throw Error(path + ": key '" + key + "' must map to a list of shell commands");
    agent->add(key, cmds.get<std::vector<std::string>>());
  }
  return agent;
}

ev::ProtocolConfig protocol_config(const Common& c) {
  ev::ProtocolConfig p;
  p.work_dir = c.work + "/play";
  return p;
}

// Whether `command` exits 0 inside the sandbox (tools are checked as agents and tests see them).
bool tool_ok(const ev::WorkspaceSandbox& sb, const std::string& command) {
  try {
    ev::SandboxLimits l;
    l.timeout_s = 30;
    return sb.run(command + " >/dev/null 2>&1", l).rc == 0;
  } catch (const Error&) {
    return false;
  }
}

}  // namespace

void add_duel_protocol_commands(CLI::App* duel) {
  // ---- doctor ----
  {
    auto c = std::make_shared<Common>();
    CLI::App* cmd = duel->add_subcommand("doctor", "check the sandbox, test tools and repositories");
    add_common(cmd, c.get(), false);
    cmd->callback([c] {
      set_action([c] {
        int bad = 0;
        ev::SandboxInfo si = ev::WorkspaceSandbox::probe();
        std::printf("sandbox: bwrap %s (%s), pids cgroup %s, memory cgroup %s%s%s\n", si.bwrap ? "ok" : "FAILED",
                    si.bwrap_path.c_str(), si.pids_cgroup ? "yes" : "no", si.memory_cgroup ? "yes" : "no",
                    si.detail.empty() ? "" : "; ", si.detail.c_str());
        bad += !si.bwrap;
        std::string probe_dir = c->work + "/doctor_ws";
        std::filesystem::create_directories(probe_dir);
        if (si.bwrap) {
          ev::WorkspaceSandbox sb(probe_dir);
          for (const char* t : {"python3 -m pytest --version", "gcc --version", "ctest --version", "node --version",
                                "go version", "mvn -v", "diff --version"})
            std::printf("tool (in sandbox) %-28s %s\n", t, tool_ok(sb, t) ? "ok" : "missing");
        }
        for (const auto& s : c->specs) {
          try {
            ev::RepoSpec spec = ev::load_repo_spec(s);
            try {
              ev::PreparedRepo p = ev::load_prepared_repo(c->work + "/repos", spec.name);
              std::printf("repo %s: prepared at %s; baseline %d passed, %d failed, %d errors; %zu pre-existing failures\n",
                          spec.name.c_str(), p.pin.c_str(), p.baseline.passed, p.baseline.failed, p.baseline.errors,
                          p.pre_existing_failures.size());
            } catch (const Error& e) {
              std::printf("repo %s: spec ok, not prepared (%s)\n", spec.name.c_str(), e.what());
            }
          } catch (const Error& e) {
            std::printf("repo spec %s: ERROR %s\n", s.c_str(), e.what());
            ++bad;
          }
        }
        std::printf("%s\n", bad ? "doctor: problems found" : "doctor: ok");
        return bad ? 1 : 0;
      });
    });
  }
  // ---- repos setup ----
  {
    CLI::App* repos = duel->add_subcommand("repos", "repository preparation");
    repos->require_subcommand(1);
    auto c = std::make_shared<Common>();
    CLI::App* setup = repos->add_subcommand("setup", "pin and prepare repositories, record pre-existing failures");
    add_common(setup, c.get(), true);
    setup->callback([c] {
      set_action([c] {
        for (const auto& s : c->specs) {
          ev::PreparedRepo p = ev::setup_repo(ev::load_repo_spec(s), c->work + "/repos");
          std::printf("%s: pinned %s; original suite %d passed, %d failed, %d errors (%s); pre-existing failures: %zu\n",
                      p.spec.name.c_str(), p.pin.c_str(), p.baseline.passed, p.baseline.failed, p.baseline.errors,
                      p.baseline.ok ? "ok" : p.baseline.reason.c_str(), p.pre_existing_failures.size());
        }
        return 0;
      });
    });
  }
  // ---- bank generate ----
  {
    CLI::App* bank = duel->add_subcommand("bank", "task bank");
    bank->require_subcommand(1);
    struct Args {
      Common c;
      std::string participant, script, bank;
      int slots = 1, attempts = 5;
    };
    auto a = std::make_shared<Args>();
    CLI::App* gen = bank->add_subcommand("generate", "run Red sessions A/B/C and the gates to fill a participant's slots");
    add_common(gen, &a->c, true);
    gen->add_option("--participant", a->participant, "participant id (model#harness[#effort#provider])")->required();
    gen->add_option("--script", a->script, "replay script JSON {session key: [commands]}")->required();
    gen->add_option("--bank", a->bank, "task bank SQLite file (default WORK/bank.sqlite)");
    gen->add_option("--slots", a->slots, "slots per repository (default 1)");
    gen->add_option("--attempts", a->attempts, "attempts per slot (default 5)");
    gen->callback([a] {
      set_action([a] {
        ev::TaskBank tb(a->bank.empty() ? a->c.work + "/bank.sqlite" : a->bank);
        auto agent = load_script(a->script);
        ev::ProtocolConfig p = protocol_config(a->c);
        p.slots_per_repo = a->slots;
        p.attempts_per_slot = a->attempts;
        auto repos = prepared(a->c);
        ev::generate_bank(tb, *agent, a->participant, repos, p);
        for (const auto& r : repos) {
          for (const auto& at : tb.attempts(a->participant, r.spec.name))
            std::printf("%s slot %d attempt %d: %s%s%s\n", r.spec.name.c_str(), at.slot, at.attempt, at.status.c_str(),
                        at.kind.empty() ? "" : (" " + at.kind + (at.gate.empty() ? "" : "/" + at.gate)).c_str(),
                        at.reason.empty() ? "" : (": " + at.reason.substr(0, 200)).c_str());
        }
        return 0;
      });
    });
  }
  // ---- match ----
  {
    struct Args {
      Common c;
      std::string a, a_script, b, b_script, bank, out, id = "match";
      int turns = 3;
    };
    auto a = std::make_shared<Args>();
    CLI::App* m = duel->add_subcommand("match", "play one match: each side defends the other's banked tasks");
    add_common(m, &a->c, true);
    m->add_option("--a", a->a, "participant A id")->required();
    m->add_option("--a-script", a->a_script, "A's replay script JSON")->required();
    m->add_option("--b", a->b, "participant B id")->required();
    m->add_option("--b-script", a->b_script, "B's replay script JSON")->required();
    m->add_option("--bank", a->bank, "task bank SQLite file (default WORK/bank.sqlite)");
    m->add_option("--turns", a->turns, "tasks per repository per side (default 3)");
    m->add_option("--match-id", a->id, "match id (default \"match\")");
    m->add_option("--out", a->out, "write the match record JSON here (the `spade duel rate` input form)");
    m->callback([a] {
      set_action([a] {
        ev::TaskBank tb(a->bank.empty() ? a->c.work + "/bank.sqlite" : a->bank);
        auto agent_a = load_script(a->a_script), agent_b = load_script(a->b_script);
        ev::MatchConfig mc;
        mc.turns_per_player = a->turns;
        ev::MatchRecord r = ev::play_match(tb, {a->a, agent_a.get()}, {a->b, agent_b.get()}, prepared(a->c),
                                           protocol_config(a->c), mc, a->id);
        for (const auto& t : r.turns)
          std::printf("%-8s red %-20s blue %-20s %s\n", t.repo.c_str(), t.red.c_str(), t.blue.c_str(),
                      t.extra.value("outcome", std::string("?")).c_str());
        std::printf("%s %.2f - %.2f %s: %s\n", r.model_a.c_str(), *r.score_a, *r.score_b, r.model_b.c_str(),
                    ev::outcome_name(r.outcome));
        if (!a->out.empty()) write_file_atomic(a->out, ev::matches_to_json({r}).dump(2) + "\n");
        return 0;
      });
    });
  }
}

}  // namespace spade::apps
