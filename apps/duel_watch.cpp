#include "apps/duel_watch.h"

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <thread>

#include <nlohmann/json.hpp>

#include "apps/checkpoint_agent.h"
#include "apps/child_process.h"
#include "apps/commands.h"
#include "apps/duel_board.h"
#include "apps/duel_enter.h"
#include "common/atomic_file.h"
#include "common/error.h"
#include "evaldual/arena.h"
#include "evaldual/entry_metrics.h"
#include "evaldual/leaderboard_dir.h"
#include "evaldual/model_agent.h"
#include "evaldual/participant.h"
#include "evaldual/task_bank.h"
#include "trainer/config.h"
#include "trainer/run_dir.h"
#include "trainer/tb_writer.h"
#include "trainer/train.h"

namespace fs = std::filesystem;
namespace ev = spade::evaldual;

namespace spade::apps {

namespace {

// One opponent of duel.opponents: "ID=SCRIPT.json" (replay), or a source id that is its own name.
struct Opponent {
  std::string name, source, script;
};

Opponent parse_opponent(const std::string& text) {
  const size_t eq = text.find('=');
  if (eq == std::string::npos) return {text, text, ""};
  return {text.substr(0, eq), text.substr(0, eq), resolve_data_path(text.substr(eq + 1))};
}

// The scored steps present now: checkpoints/step_N (published by one rename, so complete) with N a
// positive multiple of `every`, ascending.
std::vector<int64_t> scorable_steps(const trainer::RunDir& run, int every) {
  std::vector<int64_t> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(run.checkpoints_dir(), ec)) {
    const std::string name = e.path().filename().string();
    if (!e.is_directory() || name.rfind("step_", 0) != 0) continue;
    const std::string digits = name.substr(5);
    if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos) continue;
    const int64_t step = std::stoll(digits);
    if (step > 0 && step % every == 0) out.push_back(step);
  }
  std::sort(out.begin(), out.end());
  return out;
}

// The steps that already have their line in duel/metrics.jsonl (lines cut by a kill are ignored).
std::set<int64_t> logged_steps(const std::string& path) {
  std::set<int64_t> out;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    const nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_object() && j.contains("step") && j["step"].is_number_integer()) out.insert(j["step"].get<int64_t>());
  }
  return out;
}

int admitted_tasks(const ev::LeaderboardDir& board, const std::string& id) {
  ev::TaskBank bank(board.bank_path(id));
  int n = 0;
  for (const std::string& repo : board.arena().repos) n += static_cast<int>(bank.task_ids(id, repo).size());
  return n;
}

// `spade serve` processes for the checkpoints an entry plays (duel.serve), one per checkpoint, each on
// a free loopback port; stopped when the entry ends.
class Servers {
 public:
  Servers(std::string log_dir, const trainer::DuelYaml& duel) : log_dir_(std::move(log_dir)), duel_(duel) {}
  std::unique_ptr<ev::Agent> agent(const std::string& source, const std::string& dir) {
    auto it = url_.find(source);
    if (it == url_.end()) {
      ChildProcess p = ChildProcess::start({"", "serve", "--checkpoint", dir, "--port", "0", "--model-name", source,
                                            "--device", duel_.device},
                                           log_dir_ + "/serve.log");
      const std::string line = p.wait_for_line("spade serve: listening on ", 600);
      const std::string rest = line.substr(std::string("spade serve: listening on ").size());
      it = url_.emplace(source, rest.substr(0, rest.find(' ')) + "/v1").first;
      procs_.push_back(std::move(p));
    }
    ev::EndpointFile f;
    f.path = "(duel.serve)";
    ev::EndpointEntry e;
    e.endpoint.name = source;
    e.endpoint.base_url = it->second;
    e.endpoint.model = source;
    e.endpoint.api_key_env = "";
    e.endpoint.max_tokens = duel_.max_new_tokens;
    f.models[ev::Participant::parse(source).model] = e;
    return ev::make_model_agent(f, source);
  }

 private:
  std::string log_dir_;
  trainer::DuelYaml duel_;
  std::map<std::string, std::string> url_;
  std::vector<ChildProcess> procs_;
};

}  // namespace

std::string run_leaderboard_dir(const std::string& run_dir) { return run_dir + "/duel/leaderboard"; }

int duel_watch(const DuelWatchOptions& o, const std::function<void(const std::string&)>& log) {
  const trainer::RunDir run{o.run_dir};
  // The run may not have written its config yet (the watcher starts beside `spade train`).
  while (!fs::exists(run.config_path())) {
    if (o.once) throw Error(run.config_path() + " does not exist (is " + o.run_dir + " a run directory?)");
    std::this_thread::sleep_for(std::chrono::duration<double>(o.poll_s));
  }
  const trainer::Config c = trainer::load_run_config(o.run_dir);
  const trainer::DuelYaml& duel = c.duel;
  if (duel.every <= 0)
    throw Error(run.config_path() + ": duel.every is 0: this run scores no checkpoint (set duel.every, duel.arena "
                "and duel.opponents)");
  const ev::Arena arena = ev::load_arena(resolve_data_path(duel.arena));
  const std::string duel_dir = o.run_dir + "/duel";
  const std::string board_dir = run_leaderboard_dir(o.run_dir);
  fs::create_directories(duel_dir);
  {
    ev::LeaderboardLock lock(board_dir);
    ev::LeaderboardDir::create(board_dir, ev::leaderboard_arena(arena));
  }
  const std::string endpoints = duel.endpoints.empty() ? "" : resolve_data_path(duel.endpoints);
  CheckpointAgentOptions co;
  co.device = duel.device;
  co.max_new_tokens = duel.max_new_tokens;
  co.seed = c.run.seed;

  auto enter = [&](const std::string& name, const std::string& source, const std::string& script) {
    Servers servers(duel_dir, duel);
    EnterRequest r;
    r.dir = board_dir;
    r.source = source;
    r.name = name;
    r.script = script;
    r.workers = arena.workers;
    r.seed = c.run.seed;
    r.allow_first = true;
    r.arena = &arena;
    r.agent_for = [&](const std::string& src, const std::string& scr, const std::string& flag) -> std::unique_ptr<ev::Agent> {
      const std::string dir = checkpoint_dir_of(src);
      if (scr.empty() && !dir.empty())
        return duel.serve ? servers.agent(src, dir) : std::unique_ptr<ev::Agent>(std::make_unique<CheckpointAgent>(dir, co));
      return make_agent(src, scr, endpoints, flag);
    };
    return enter_leaderboard(r, log);
  };

  // The first incumbents: the opponents, each with its own bank.
  for (const std::string& text : duel.opponents) {
    const Opponent op = parse_opponent(text);
    if (ev::LeaderboardDir::open(board_dir).find(ev::canonical_participant_id(op.name))) continue;
    log("duel watch: opponent " + op.name + " enters " + board_dir);
    enter(op.name, op.source, op.script);
  }

  const std::string metrics_path = duel_dir + "/metrics.jsonl";
  std::unique_ptr<trainer::TbWriter> tb;
  int scored = 0;
  for (;;) {
    const std::set<int64_t> logged = logged_steps(metrics_path);
    bool did = false;
    for (int64_t step : scorable_steps(run, duel.every)) {
      if (logged.count(step)) continue;
      const std::string name = c.run.name + "@" + std::to_string(step);
      const std::string id = ev::canonical_participant_id(name);
      EnterResult done;
      const bool entered_now = !ev::LeaderboardDir::open(board_dir).find(id);
      if (entered_now) {
        log("duel watch: scoring step " + std::to_string(step) + " as " + name);
        done = enter(name, "checkpoint:" + fs::absolute(run.checkpoint_dir(step)).lexically_normal().string(), "");
      }
      // Its line: from the leaderboard as it is now (an entry finished before a kill is not replayed).
      const ev::LeaderboardDir board = ev::LeaderboardDir::open(board_dir);
      std::vector<ev::MatchRecord> own;
      for (const ev::MatchRecord& m : board.matches())
        if (m.model_a == id || m.model_b == id) own.push_back(m);
      const ev::Rankings rk = entered_now
                                   ? done.rankings
                                   : ev::rankings_from_json(nlohmann::json::parse(read_file(board.rankings_path())),
                                                            board.rankings_path());
      const double match_s = done.matches_played_now > 0 ? done.match_seconds / done.matches_played_now : std::nan("");
      const std::map<std::string, double> m = ev::entry_metrics(rk, own, id, admitted_tasks(board, id), match_s);
      trainer::RunDir::log_metrics_to(metrics_path, step, m);
      if (!tb) tb = std::make_unique<trainer::TbWriter>(run.tb_dir());
      tb->add_scalars(step, m);
      log("duel watch: step " + std::to_string(step) + ": duel/bt " + std::to_string(m.at("duel/bt")) + " -> " +
          metrics_path);
      ++scored;
      did = true;
    }
    if (did) continue;  // look again at once: more may have appeared while scoring
    if (o.once) return scored;
    if (o.until_step >= 0) {
      const int64_t last = o.until_step / duel.every * duel.every;
      if (last <= 0 || logged_steps(metrics_path).count(last)) return scored;
    }
    std::this_thread::sleep_for(std::chrono::duration<double>(o.poll_s));
  }
}

}  // namespace spade::apps
