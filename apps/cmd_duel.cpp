// `spade duel ...`: the SWE-Duel protocol commands (the `duel` subcommand and `rate` live in
// apps/cmd_duel_rate.cpp; this file adds to it):
//   spade duel doctor [--spec FILE.yaml]... [--work DIR] [--endpoints FILE.yaml [--participant ID] [--live]]
//   spade duel repos setup --spec FILE.yaml... [--work DIR]
//   spade duel bank generate --participant ID (--script SCRIPTS.json | --endpoints FILE.yaml)
//                            --spec FILE.yaml... [--work DIR] [--bank FILE.sqlite] [--slots N] [--attempts N]
//   spade duel match --a ID [--a-script A.json] --b ID [--b-script B.json] [--endpoints FILE.yaml]
//                    --spec FILE.yaml... [--work DIR] [--bank FILE.sqlite] [--turns N] [--out match.json [--overwrite]]
//       Exit status 2 (a usage error, like a command line the parser refuses) when the bank does not
//       exist or holds no task of either participant on the given repositories: every turn would be an
//       automatic Blue win and the draw would mean nothing; the message names the bank and the `bank
//       generate` command that fills it. Exit status 1 when the match was played without a single
//       contested turn (every defense dropped); its record, if written, carries a "warning". A side
//       without tasks on a repository is legal (paper §3.4: its Red turns are Blue wins) and noted.
//       --turns (default 1, as bank generate's --slots) above a participant's slots on a repository is
//       a usage error naming both numbers.
//   spade duel tournament --participant ID... [--script ID=FILE.json]... [--endpoints FILE.yaml]
//                    [--late-entrant ID --prior MATCHES.json] --spec FILE.yaml... [--work DIR] [--bank FILE]
//                    [--turns N] [--id T] [--dir D] [--leaderboard DIR] [--bootstrap N] [--seed S]
//       A resumable round robin (evaldual/tournament.h): rerun the same command after a crash and it
//       continues; writes D/state.json, D/matches.json, D/rankings.json and the page D/leaderboard.html
//       (evaldual/leaderboard_page.h); with --leaderboard DIR also makes or extends that leaderboard
//       directory (evaldual/leaderboard_dir.h, apps/cmd_duel_board.cpp). Tasks come from the bank,
//       which is checked as for `match` (exit status 2 when no participant has a task).
// Outputs follow common/output_path.h: --work is new, empty, or a work directory these commands made
// (marked by .spade-duel-work); --bank is new or a task bank to extend; --dir is new, empty, or a
// tournament to resume; --out is new or empty unless --overwrite. All are checked before any play.
// A participant is played by a replay script when one is given (evaldual/protocol.h ScriptedAgent: a
// JSON object mapping session keys "REPO/red_a/s1/a1", "REPO/blue/RED/s1", ... to shell commands),
// else by the model endpoint its id names in the endpoints file (evaldual/model_endpoints.h; example
// configs/duel/endpoints.yaml). `doctor --live` makes one model call and reports latency and usage.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <memory>
#include <set>

#include "apps/checkpoint_agent.h"
#include "apps/commands.h"
#include "apps/duel_board.h"
#include "common/atomic_file.h"
#include "common/error.h"
#include "common/output_path.h"
#include "evaldual/adapters.h"
#include "evaldual/diff.h"
#include "evaldual/input_fields.h"
#include "evaldual/duel_match.h"
#include "evaldual/leaderboard_page.h"
#include "evaldual/model_agent.h"
#include "evaldual/protocol.h"
#include "evaldual/repo_spec.h"
#include "evaldual/rankings.h"
#include "evaldual/task_bank.h"
#include "evaldual/tournament.h"
#include "evaldual/workspace_sandbox.h"

using nlohmann::json;
namespace ev = spade::evaldual;

namespace spade::apps {
namespace {

constexpr const char* kDefaultWork = "runs/duel";

struct Common {
  std::vector<std::string> specs;
  std::string work = kDefaultWork;
};

void add_common(CLI::App* cmd, Common* c, bool specs_required) {
  auto* o = cmd->add_option("--spec", c->specs, "repository spec YAML (repeatable)");
  if (specs_required) o->required();
  cmd->add_option("--work", c->work,
                  "work directory: prepared repositories, workspaces, bank; a new or empty "
                  "directory, or one these commands made");
}

// The file that marks a directory as a duel work directory these commands made.
constexpr const char* kWorkMarker = ".spade-duel-work";

// Whether `dir` is a work directory of these commands: marked, or (made before the marker existed)
// holding nothing but what they write there.
bool is_duel_work_dir(const std::string& dir) {
  if (std::filesystem::exists(dir + "/" + kWorkMarker)) return true;
  static const std::set<std::string> known = {"repos", "play", "bank.sqlite", "bank.sqlite-wal", "bank.sqlite-shm",
                                              "tournaments", "doctor_ws", "doctor_scoring"};
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec))
    if (!known.count(e.path().filename().string())) return false;
  return !ec;
}

// --work before a command writes into it (common/output_path.h): absent, empty, or a duel work
// directory; its parent must exist, except runs/ of the default runs/duel, created under the current
// directory. With `create`, the directory and its marker are made. Throws spade::Error.
void claim_work_dir(const Common& c, bool create) {
  OutputRule rule;
  rule.what = "duel --work";
  rule.overwrite_flag = "";
  rule.own = is_duel_work_dir;
  rule.may_create_parent = c.work == kDefaultWork;
  check_output(c.work, OutputKind::directory, rule);
  if (!create) return;
  std::error_code ec;
  const std::filesystem::path parent = std::filesystem::path(c.work).parent_path();
  if (!parent.empty() && !std::filesystem::exists(parent))
    std::printf("note: creating %s/ under %s, the root of the default work directory %s\n", parent.c_str(),
                std::filesystem::current_path(ec).c_str(), kDefaultWork);
  std::filesystem::create_directories(c.work, ec);
  if (ec) throw Error("duel --work " + c.work + ": cannot create it: " + ec.message());
  if (!std::filesystem::exists(c.work + "/" + kWorkMarker))
    write_file_atomic(c.work + "/" + kWorkMarker, "a work directory of `spade duel` (repositories, workspaces, banks)\n");
}

// Whether `path` is an SQLite database (the task bank's format): its 16-byte header.
bool is_sqlite_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char header[16] = {};
  return in.read(header, sizeof header) && std::string(header, sizeof header) == std::string("SQLite format 3\0", 16);
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
  const json j = ev::read_json_document(path);
  if (!j.is_object())
    throw Error(path + ": expected a replay script, a JSON object {session key: [shell commands]}, got " + ev::describe_json(j));
  auto agent = std::make_unique<ev::ScriptedAgent>();
  for (const auto& [key, cmds] : j.items()) agent->add(key, ev::json_string_list(cmds, path + ": " + key));
  return agent;
}

// The bank a match or tournament reads: it must exist and hold a task of at least one of `ids` on
// `repos` (otherwise every turn would be an automatic Blue win and every match a meaningless draw), and
// `turns` tasks per repository and side may not exceed the slots a participant generated there (paper
// §3.4 scores a missing task as a Blue win only for a slot that was tried and exhausted, not for one
// that was never asked for). Returns 0 after printing a note for each participant that has no task on a
// repository (its Red turns there are automatic Blue wins), or prints the problem, the bank's path and
// the command that fixes it and returns kUsageError.
int check_bank(const std::string& bank_path, const std::vector<std::string>& ids, const Common& c, const char* command,
               int turns) {
  std::string specs;
  for (const auto& s : c.specs) specs += " --spec " + s;
  auto fill = [&] {
    return "fill it first, once per participant: spade duel bank generate --participant ID (--script FILE.json | "
           "--endpoints FILE.yaml)" + specs + " --work " + c.work + " --bank " + bank_path;
  };
  if (!std::filesystem::exists(bank_path)) {
    std::fprintf(stderr, "error: duel %s: the task bank %s does not exist; %s\n", command, bank_path.c_str(), fill().c_str());
    return kUsageError;
  }
  std::vector<std::string> repos;
  for (const auto& s : c.specs) repos.push_back(ev::load_repo_spec(s).name);
  ev::TaskBank tb(bank_path);
  int total = 0;
  std::vector<std::string> notes;
  for (const auto& id : ids) {
    for (const auto& r : repos) {
      const int slots = tb.slot_count(id, r);
      if (slots > 0 && turns > slots) {
        std::fprintf(stderr,
                     "error: duel %s: --turns %d asks for %d tasks per repository and side, but %s has %d slot%s on "
                     "%s in %s (bank generate --slots %d): the other Red turns would be automatic Blue wins for tasks "
                     "never asked for; pass --turns %d, or generate %d slots: spade duel bank generate --participant "
                     "%s --slots %d ...\n",
                     command, turns, turns, id.c_str(), slots, slots == 1 ? "" : "s", r.c_str(), bank_path.c_str(),
                     slots, slots, turns, id.c_str(), turns);
        return kUsageError;
      }
      size_t k = tb.task_ids(id, r).size();
      total += static_cast<int>(k);
      if (k == 0) notes.push_back(id + " has no task on " + r + ": its Red turns there are automatic Blue wins");
    }
  }
  if (total == 0) {
    std::string who;
    for (const auto& id : ids) who += (who.empty() ? "" : ", ") + id;
    std::fprintf(stderr,
                 "error: duel %s: the task bank %s holds no task of %s on these repositories: every turn would be an "
                 "automatic Blue win and every result a draw that means nothing; %s\n",
                 command, bank_path.c_str(), who.c_str(), fill().c_str());
    return kUsageError;
  }
  for (const auto& n : notes) std::printf("note: %s (paper §3.4: a missing task is scored as a Blue win)\n", n.c_str());
  return 0;
}

}  // namespace

// The agent for `participant`: its replay script when `script` is given, else its model endpoint from
// the endpoints file. Throws spade::Error when neither is given.
std::unique_ptr<ev::Agent> make_agent(const std::string& participant, const std::string& script,
                                      const std::string& endpoints, const std::string& script_flag) {
  if (!script.empty()) return load_script(script);
  if (const std::string dir = checkpoint_dir_of(participant); !dir.empty())
    return std::make_unique<CheckpointAgent>(dir, CheckpointAgentOptions{});
  if (!endpoints.empty()) return ev::make_model_agent(ev::load_endpoints(endpoints), participant);
  throw Error("participant '" + participant + "': give " + script_flag + " (replay) or --endpoints FILE.yaml (model)");
}

// Prints a model agent's accounting (nothing for replay agents).
void print_usage(const std::string& participant, ev::Agent* agent) {
  if (auto* c = dynamic_cast<CheckpointAgent*>(agent)) {
    const CheckpointUsage u = c->totals();
    std::printf("%s: %lld in-process calls, %lld prompt + %lld completion tokens (%lld prompt tokens cut to fit the "
                "context)\n", participant.c_str(), (long long)u.calls, (long long)u.prompt_tokens,
                (long long)u.completion_tokens, (long long)u.dropped_tokens);
    return;
  }
  auto* m = dynamic_cast<ev::ModelAgent*>(agent);
  if (!m) return;
  ev::ChatTotals t = m->client().totals();
  std::printf("%s: %lld model calls (%lld failed, %lld retries), %lld prompt + %lld completion tokens, $%.4f\n",
              participant.c_str(), (long long)t.calls, (long long)t.failed_calls, (long long)t.retries,
              (long long)t.prompt_tokens, (long long)t.completion_tokens, t.cost_usd);
}

namespace {

// doctor --live: one chat completion through `participant`'s endpoint. Returns false on failure.
bool live_call(const ev::EndpointFile& f, const std::string& participant) {
  try {
    ev::ModelEndpoint ep = ev::resolve_endpoint(f, ev::Participant::parse(participant));
    ev::ChatClient client(ep);
    ev::ChatReply r = client.complete({{"system", "You are a health check."}, {"user", "Reply with the word: ok"}});
    std::string reply = r.content.substr(0, 80);
    for (char& ch : reply)
      if (ch == '\n') ch = ' ';
    std::printf("model %s (%s at %s): ok in %.2f s, %d retries; tokens %lld prompt + %lld completion%s; cost $%.6f (%s); "
                "finish %s; reply \"%s\"\n",
                participant.c_str(), ep.model.c_str(), ep.url().c_str(), r.usage.latency_s, r.usage.retries,
                (long long)r.usage.prompt_tokens, (long long)r.usage.completion_tokens,
                r.usage.usage_reported ? "" : " (no usage block)", r.usage.cost_usd,
                r.usage.cost_reported ? "reported" : "from prices", r.finish_reason.c_str(), reply.c_str());
    return true;
  } catch (const Error& e) {
    std::printf("model %s: FAILED %s\n", participant.c_str(), e.what());
    return false;
  }
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


// doctor's scoring-path check on a fixture written on the spot: a one-function Python package whose
// test fails, scored in the workspace sandbox with the pytest adapter, then a unified diff (the form a
// Blue fix arrives in) applied with apply_patch() and the suite scored again. Prints one line; returns
// whether the verdicts were "1 failed" and then "1 passed".
bool scoring_path_ok(const std::string& dir) {
  try {
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir + "/calc");
    write_file_atomic(dir + "/calc/__init__.py", "def add(a, b):\n    return a - b\n");
    write_file_atomic(dir + "/test_calc.py", "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n");
    ev::WorkspaceSandbox sb(dir);
    const std::string cmd = "python3 -m pytest -q -p no:cacheprovider";
    ev::CommandResult before_run = sb.run(cmd);
    ev::TestOutcome before = ev::parse_test_output("pytest", before_run.output, before_run.rc);
    ev::apply_patch(dir, "--- a/calc/__init__.py\n+++ b/calc/__init__.py\n@@ -1,2 +1,2 @@\n def add(a, b):\n"
                         "-    return a - b\n+    return a + b\n");
    ev::CommandResult after_run = sb.run(cmd);
    ev::TestOutcome after = ev::parse_test_output("pytest", after_run.output, after_run.rc);
    bool ok = !before.ok && before.failed == 1 && after.ok && after.passed == 1;
    std::printf("scoring path (fixture, sandboxed pytest, patch applied): %s (before: %s; after: %d passed)\n",
                ok ? "ok" : "FAILED", before.ok ? "passed?!" : before.reason.c_str(), after.passed);
    return ok;
  } catch (const Error& e) {
    std::printf("scoring path: FAILED %s\n", e.what());
    return false;
  }
}

}  // namespace

void add_duel_protocol_commands(CLI::App* duel) {
  // ---- doctor ----
  {
    auto c = std::make_shared<Common>();
    struct Live {
      std::string endpoints, participant;
      bool live = false;
    };
    auto lv = std::make_shared<Live>();
    CLI::App* cmd = duel->add_subcommand("doctor", "check the sandbox, test tools, repositories and model endpoints");
    add_common(cmd, c.get(), false);
    cmd->add_option("--endpoints", lv->endpoints, "endpoints YAML: check it resolves");
    cmd->add_option("--participant", lv->participant,
                    "participant id whose endpoint --live calls (default: every model in --endpoints)");
    cmd->add_flag("--live", lv->live, "make one model call per checked participant and report latency and usage");
    cmd->callback([c, lv] {
      set_action([c, lv] {
        int bad = 0;
        if (lv->live && lv->endpoints.empty()) throw Error("doctor --live needs --endpoints FILE.yaml");
        claim_work_dir(*c, /*create=*/true);
        if (!lv->endpoints.empty()) {
          try {
            ev::EndpointFile f = ev::load_endpoints(lv->endpoints);
            std::vector<std::string> ids;
            if (!lv->participant.empty()) ids.push_back(lv->participant);
            else
              for (const auto& [nick, _] : f.models) ids.push_back(nick);
            for (const auto& id : ids) {
              ev::ModelEndpoint ep = ev::resolve_endpoint(f, ev::Participant::parse(id));
              std::printf("endpoint %s: %s at %s%s\n", id.c_str(), ep.model.c_str(), ep.url().c_str(),
                          lv->live ? "" : " (not called; add --live)");
              if (lv->live) bad += !live_call(f, id);
            }
          } catch (const Error& e) {
            std::printf("endpoints %s: ERROR %s\n", lv->endpoints.c_str(), e.what());
            ++bad;
          }
        }
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
                                "go version", "javac -version", "java -version", "mvn -v", "diff --version"})
            std::printf("tool (in sandbox) %-28s %s\n", t, tool_ok(sb, t) ? "ok" : "missing");
          bad += !scoring_path_ok(c->work + "/doctor_scoring");
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
        claim_work_dir(*c, /*create=*/true);
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
      std::string participant, script, endpoints, bank;
      int slots = 1, attempts = 5;
    };
    auto a = std::make_shared<Args>();
    CLI::App* gen = bank->add_subcommand("generate", "run Red sessions A/B/C and the gates to fill a participant's slots");
    add_common(gen, &a->c, true);
    gen->add_option("--participant", a->participant, "participant id (model#harness[#effort#provider])")->required();
    gen->add_option("--script", a->script, "replay script JSON {session key: [commands]}");
    gen->add_option("--endpoints", a->endpoints, "endpoints YAML: the participant is played by its model endpoint");
    gen->add_option("--bank", a->bank, "task bank SQLite file (default WORK/bank.sqlite): new, or a bank to extend");
    gen->add_option("--slots", a->slots, "slots per repository")->check(CLI::Range(1, std::numeric_limits<int>::max()));
    gen->add_option("--attempts", a->attempts, "attempts per slot")->check(CLI::Range(1, std::numeric_limits<int>::max()));
    gen->callback([a] {
      set_action([a] {
        claim_work_dir(a->c, /*create=*/true);
        const std::string bank = a->bank.empty() ? a->c.work + "/bank.sqlite" : a->bank;
        OutputRule bank_rule;  // a bank is extended (each participant fills its slots), never replaced
        bank_rule.what = "duel bank generate --bank";
        bank_rule.overwrite_flag = "";
        bank_rule.own = is_sqlite_file;
        bank_rule.inputs = a->c.specs;
        if (!a->script.empty()) bank_rule.inputs.push_back(a->script);
        if (!a->endpoints.empty()) bank_rule.inputs.push_back(a->endpoints);
        check_output(bank, OutputKind::file, bank_rule);
        ev::TaskBank tb(bank);
        auto agent = make_agent(a->participant, a->script, a->endpoints, "--script");
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
        print_usage(a->participant, agent.get());
        return 0;
      });
    });
  }
  // ---- match ----
  {
    struct Args {
      Common c;
      std::string a, a_script, b, b_script, endpoints, bank, out, id = "match";
      int turns = 1;  // = bank generate's --slots default: one task per repository and side
      int workers = ev::MatchConfig{}.workers;
      bool overwrite = false;
    };
    auto a = std::make_shared<Args>();
    CLI::App* m = duel->add_subcommand("match", "play one match: each side defends the other's banked tasks");
    add_common(m, &a->c, true);
    m->add_option("--a", a->a, "participant A id")->required();
    m->add_option("--a-script", a->a_script, "A's replay script JSON (else A's model endpoint)");
    m->add_option("--b", a->b, "participant B id")->required();
    m->add_option("--b-script", a->b_script, "B's replay script JSON (else B's model endpoint)");
    m->add_option("--endpoints", a->endpoints, "endpoints YAML for participants without a script");
    m->add_option("--bank", a->bank, "task bank SQLite file (default WORK/bank.sqlite)");
    m->add_option("--turns", a->turns, "tasks per repository per side")->check(CLI::Range(1, std::numeric_limits<int>::max()));
    m->add_option("--match-id", a->id, "match id");
    m->add_option("--workers", a->workers, "turns played at once (the record does not depend on it)")
        ->check(CLI::Range(1, 64));
    m->add_option("--out", a->out,
                  "write the match record JSON here (the `spade duel rate` input form): a new or empty file in an "
                  "existing directory");
    m->add_flag("--overwrite", a->overwrite, "replace a non-empty --out (never one of this command's inputs)");
    m->callback([a] {
      set_action([a] {
        const std::string bank = a->bank.empty() ? a->c.work + "/bank.sqlite" : a->bank;
        OutputRule rule;
        rule.what = "duel match --out";
        rule.overwrite = a->overwrite;
        rule.inputs = a->c.specs;
        rule.inputs.insert(rule.inputs.end(), {bank, a->a_script, a->b_script, a->endpoints});
        if (!a->out.empty()) check_output(a->out, OutputKind::file, rule);  // before the match is played
        claim_work_dir(a->c, /*create=*/false);
        if (int rc = check_bank(bank, {a->a, a->b}, a->c, "match", a->turns)) return rc;
        const std::vector<ev::PreparedRepo> repos = prepared(a->c);
        ev::TaskBank tb(bank);
        auto agent_a = make_agent(a->a, a->a_script, a->endpoints, "--a-script");
        auto agent_b = make_agent(a->b, a->b_script, a->endpoints, "--b-script");
        ev::MatchConfig mc;
        mc.turns_per_player = a->turns;
        mc.workers = a->workers;
        ev::MatchRecord r = ev::play_match(tb, {a->a, agent_a.get()}, {a->b, agent_b.get()}, repos,
                                           protocol_config(a->c), mc, a->id);
        for (const auto& t : r.turns)
          std::printf("%-8s red %-20s blue %-20s %s\n", t.repo.c_str(), t.red.c_str(), t.blue.c_str(),
                      t.extra.value("outcome", std::string("?")).c_str());
        std::printf("%s %.2f - %.2f %s: %s\n", r.model_a.c_str(), *r.score_a, *r.score_b, r.model_b.c_str(),
                    ev::outcome_name(r.outcome));
        print_usage(a->a, agent_a.get());
        print_usage(a->b, agent_b.get());
        if (!a->out.empty()) write_output_file(a->out, ev::matches_to_json({r}).dump(2) + "\n", rule);
        if (ev::contested_turns(r) == 0) {  // the record (if written) carries the same warning
          std::fprintf(stderr, "error: duel match: %s\n", r.extra.value("warning", std::string()).c_str());
          return 1;
        }
        return 0;
      });
    });
  }
  // ---- tournament ----
  {
    struct Args {
      Common c;
      std::vector<std::string> participants, scripts;
      std::string endpoints, bank, id = "tournament", dir, late_entrant, prior, leaderboard;
      int turns = 1, bootstrap = 1000;  // turns = bank generate's --slots default
      int workers = ev::MatchConfig{}.workers;
      uint64_t seed = 42;
    };
    auto a = std::make_shared<Args>();
    CLI::App* t = duel->add_subcommand(
        "tournament", "play a resumable round robin (or a late entrant's active-sampling matches) and rate it");
    add_common(t, &a->c, true);
    t->add_option("--participant", a->participants, "participant id (repeatable; the round robin's players, or the "
                                                    "incumbents with --late-entrant)")->required();
    t->add_option("--script", a->scripts, "ID=SCRIPT.json: play ID from a replay script (repeatable); others use --endpoints");
    t->add_option("--endpoints", a->endpoints, "endpoints YAML for participants without a script");
    t->add_option("--bank", a->bank, "task bank SQLite file (default WORK/bank.sqlite; fill it with `bank generate`)");
    t->add_option("--turns", a->turns, "tasks per repository per side")->check(CLI::Range(1, std::numeric_limits<int>::max()));
    t->add_option("--id", a->id, "tournament id; match ids derive from it");
    t->add_option("--workers", a->workers, "turns of a match played at once (the records do not depend on it)")
        ->check(CLI::Range(1, 64));
    t->add_option("--dir", a->dir,
                  "tournament directory: state.json, matches.json, rankings.json (default WORK/tournaments/ID); new, "
                  "empty, or a tournament's to resume");
    t->add_option("--late-entrant", a->late_entrant, "a newcomer that plays ceil(log2 M)+1 incumbents chosen by active sampling");
    t->add_option("--prior", a->prior, "matches JSON of earlier play (e.g. the round robin's matches.json): rates the incumbents for active sampling");
    t->add_option("--leaderboard", a->leaderboard,
                  "also make (or extend) this leaderboard directory: each player's own bank, the matches, "
                  "rankings.json and the page (late entrants then use `duel enter`)");
    t->add_option("--bootstrap", a->bootstrap, "bootstrap draws of the final rating (0 = none)")
        ->check(CLI::Range(0, std::numeric_limits<int>::max()));
    t->add_option("--seed", a->seed, "bootstrap seed");
    t->callback([a] {
      set_action([a] {
        std::map<std::string, std::string> script_of;
        for (const std::string& s : a->scripts) {
          size_t eq = s.find('=');
          if (eq == std::string::npos || eq == 0) throw Error("--script '" + s + "': expected ID=SCRIPT.json");
          script_of[s.substr(0, eq)] = s.substr(eq + 1);
        }
        std::vector<std::string> players = a->participants;
        if (!a->late_entrant.empty()) players.push_back(a->late_entrant);
        const std::string bank = a->bank.empty() ? a->c.work + "/bank.sqlite" : a->bank;
        const std::string dir = a->dir.empty() ? a->c.work + "/tournaments/" + a->id : a->dir;
        OutputRule dir_rule;  // resumed when it holds a tournament's state, never replaced
        dir_rule.what = "duel tournament --dir";
        dir_rule.overwrite_flag = "";
        dir_rule.own = [](const std::string& d) { return std::filesystem::exists(d + "/state.json"); };
        dir_rule.may_create_parent = a->dir.empty();  // WORK/tournaments/
        dir_rule.inputs = a->c.specs;
        dir_rule.inputs.insert(dir_rule.inputs.end(), {bank, a->endpoints, a->prior});
        for (const auto& [id, script] : script_of) dir_rule.inputs.push_back(script);
        if (!a->leaderboard.empty() && !a->late_entrant.empty())
          throw Error("duel tournament: --leaderboard publishes a round robin; a late entrant joins a leaderboard "
                      "with `spade duel enter`");
        claim_work_dir(a->c, /*create=*/false);
        check_output(dir, OutputKind::directory, dir_rule);
        if (!a->leaderboard.empty()) {  // before any play: new, empty, or a leaderboard to extend
          OutputRule board_rule = dir_rule;
          board_rule.what = "duel tournament --leaderboard";
          board_rule.own = ev::LeaderboardDir::is_leaderboard;
          board_rule.may_create_parent = false;
          check_output(a->leaderboard, OutputKind::directory, board_rule);
        }
        if (int rc = check_bank(bank, players, a->c, "tournament", a->turns)) return rc;
        std::map<std::string, std::unique_ptr<ev::Agent>> agents;
        for (const std::string& p : players) {
          auto it = script_of.find(p);
          agents[p] = make_agent(p, it == script_of.end() ? "" : it->second, a->endpoints, "--script " + p + "=FILE");
        }
        const std::vector<ev::PreparedRepo> repos = prepared(a->c);
        ev::TaskBank tb(bank);
        const ev::ProtocolConfig protocol = protocol_config(a->c);
        ev::MatchConfig mc;
        mc.turns_per_player = a->turns;
        mc.workers = a->workers;
        ev::TournamentOptions to;
        to.seed = a->seed;
        if (!a->prior.empty()) to.prior_matches = ev::load_matches(a->prior);  // errors name the file and field
        to.on_match = [](const ev::MatchRecord& r, int done, int total) {
          std::printf("[%d/%d] %s: %s %.2f - %.2f %s (%s)%s\n", done, total, r.match_id.c_str(), r.model_a.c_str(),
                      r.score_a.value_or(0), r.score_b.value_or(0), r.model_b.c_str(), ev::outcome_name(r.outcome),
                      ev::contested_turns(r) == 0 ? ": no contested turn, the result carries no information" : "");
          std::fflush(stdout);
        };
        ev::TournamentState initial = a->late_entrant.empty()
                                          ? ev::make_round_robin_state(a->id, a->participants)
                                          : ev::make_late_entrant_state(a->id, a->late_entrant, a->participants);
        auto play = [&](const ev::ScheduledMatch& m) {
          return ev::play_match(tb, {m.a, agents.at(m.a).get()}, {m.b, agents.at(m.b).get()}, repos, protocol, mc,
                                m.match_id);
        };
        std::vector<ev::MatchRecord> matches = ev::run_tournament(dir, initial, play, to);
        ev::RankingOptions ro;
        ro.tournament_id = a->id;
        ro.format = initial.format;
        ro.bootstrap_samples = a->bootstrap;
        ro.seed = a->seed;
        ro.targets_per_repo = a->turns;
        std::vector<ev::MatchRecord> rated = to.prior_matches;
        rated.insert(rated.end(), matches.begin(), matches.end());
        ev::Rankings r = ev::compute_rankings(rated, ro);
        write_file_atomic(dir + "/rankings.json", ev::rankings_to_json(r).dump(2) + "\n");
        write_file_atomic(dir + "/leaderboard.html", ev::leaderboard_html(r));
        std::fputs(ev::rankings_table(r).c_str(), stdout);
        std::printf("%zu matches in %s (state.json, matches.json, rankings.json, leaderboard.html)\n", matches.size(),
                    dir.c_str());
        if (!a->leaderboard.empty()) {
          ev::LeaderboardArena arena;
          for (const ev::PreparedRepo& r : repos) arena.repos.push_back(r.spec.name);
          for (const std::string& s : a->c.specs) arena.specs.push_back(std::filesystem::absolute(s).lexically_normal());
          arena.turns_per_player = a->turns;
          ro.format = "leaderboard";
          ev::Rankings board = publish_tournament(a->leaderboard, arena, players, script_of, bank, matches, a->id, ro);
          std::printf("leaderboard %s: %zu participants, %zu matches (rankings.json, leaderboard.html)\n",
                      a->leaderboard.c_str(), board.rankings.size(), board.matches.size());
        }
        for (const std::string& p : players) print_usage(p, agents.at(p).get());
        return 0;
      });
    });
  }
}

}  // namespace spade::apps
