#include "apps/duel_enter.h"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>

#include "apps/duel_board.h"
#include "common/atomic_file.h"
#include "common/error.h"
#include "evaldual/duel_match.h"
#include "evaldual/leaderboard_dir.h"
#include "evaldual/participant.h"
#include "evaldual/repo_spec.h"
#include "evaldual/task_bank.h"
#include "evaldual/tournament.h"

namespace fs = std::filesystem;
namespace ev = spade::evaldual;

namespace spade::apps {

namespace {

// The leaderboard's repositories, prepared under its work/ folder (once; later calls reuse them).
std::vector<ev::PreparedRepo> prepare_arena(const ev::LeaderboardDir& board) {
  std::vector<ev::PreparedRepo> repos;
  const std::string work = board.work_path() + "/repos";
  for (size_t i = 0; i < board.arena().specs.size(); ++i) {
    ev::RepoSpec spec = ev::load_repo_spec(board.arena().specs[i]);
    if (spec.name != board.arena().repos[i])
      throw Error("leaderboard " + board.root() + ": spec " + board.arena().specs[i] + " names repository '" +
                  spec.name + "', the leaderboard '" + board.arena().repos[i] + "'");
    ev::PreparedRepo p;
    try {
      p = ev::load_prepared_repo(work, spec.name);
    } catch (const Error&) {
      p = ev::setup_repo(spec, work);
    }
    p.spec = spec;
    repos.push_back(p);
  }
  return repos;
}

template <class... Args>
std::string format(const char* fmt, Args... args) {
  char buf[512];
  std::snprintf(buf, sizeof buf, fmt, args...);
  return buf;
}

}  // namespace

EnterResult enter_leaderboard(const EnterRequest& r, const std::function<void(const std::string&)>& log) {
  if (!r.agent_for) throw Error("enter_leaderboard: no agent factory");
  if (!ev::LeaderboardDir::is_leaderboard(r.dir))
    throw Error(r.dir + " is not a leaderboard (no leaderboard.json); make one with `spade duel tournament ... "
                "--leaderboard " + r.dir + "`");
  ev::LeaderboardLock lock(r.dir);
  const ev::LeaderboardDir board = ev::LeaderboardDir::open(r.dir);
  const std::string id = ev::canonical_participant_id(r.name);
  if (auto p = board.find(id))
    throw Error("'" + id + "' is already on " + r.dir + " (" + p->origin + ", " + p->added_at +
                "); a participant enters once");
  std::vector<std::string> incumbents;
  std::map<std::string, std::unique_ptr<ev::Agent>> agents;
  std::map<std::string, std::string> bank_of;
  for (const ev::LeaderboardParticipant& p : board.participants()) {
    incumbents.push_back(p.id);
    bank_of[p.id] = board.bank_path(p.id);
    const std::string script = fs::exists(board.script_path(p.id)) ? board.script_path(p.id) : "";
    agents[p.id] = r.agent_for(p.source, script, "a replay script stored at " + board.script_path(p.id));
  }
  if (incumbents.empty() && !r.allow_first) throw Error(r.dir + " has no participant to play against");
  agents[id] = r.agent_for(r.source, r.script, "--script");

  const std::vector<ev::PreparedRepo> repos = prepare_arena(board);
  const std::string entry = board.work_path() + "/enter/" + ev::leaderboard_slug(id);
  ev::ProtocolConfig protocol;
  protocol.work_dir = entry + "/play";
  protocol.slots_per_repo = board.arena().turns_per_player;  // the tasks a match asks of each side
  protocol.attempts_per_slot = r.attempts;
  if (r.arena) ev::apply_arena(*r.arena, &protocol);

  // 1. Its own bank, built under work/ (resumable: finished slots are skipped).
  EnterResult out;
  const std::string own_bank = entry + "/bank.sqlite";
  bank_of[id] = own_bank;
  {
    ev::TaskBank tb(own_bank);
    ev::generate_bank(tb, *agents[id], id, repos, protocol);
    for (const auto& repo : repos) {
      const size_t k = tb.task_ids(id, repo.spec.name).size();
      out.admitted_tasks += static_cast<int>(k);
      log(format("%s: %zu task%s on %s%s", id.c_str(), k, k == 1 ? "" : "s", repo.spec.name.c_str(),
                 k == 0 ? " (its Red turns there are automatic Blue wins, paper §3.4)" : ""));
    }
  }
  // 2. Its matches: active sampling against the incumbents' results (resumable, tournament.h).
  if (!incumbents.empty()) {
    ev::TournamentOptions to;
    to.seed = r.seed;
    for (const ev::MatchRecord& m : board.matches())
      if (m.model_a != id && m.model_b != id) to.prior_matches.push_back(m);
    to.on_match = [&log](const ev::MatchRecord& m, int done, int total) {
      log(format("[%d/%d] %s: %s %.2f - %.2f %s (%s)", done, total, m.match_id.c_str(), m.model_a.c_str(),
                 m.score_a.value_or(0), m.score_b.value_or(0), m.model_b.c_str(), ev::outcome_name(m.outcome)));
    };
    ev::MatchConfig mc;
    mc.turns_per_player = board.arena().turns_per_player;
    mc.workers = r.workers;
    const ev::TournamentState initial = ev::make_late_entrant_state("enter:" + id, id, incumbents);
    log(format("%s enters against %zu incumbents: %d matches (ceil(log2 M)+1 in [3, M])", id.c_str(),
               incumbents.size(), initial.budget));
    auto play = [&](const ev::ScheduledMatch& m) {
      // A bank of the match's two sides (its defense cache the match's own, which a resumed match
      // reuses), assembled from copies: no participant's bank is opened.
      const auto t0 = std::chrono::steady_clock::now();
      const std::string match_dir = board.work_path() + "/matches/" + ev::leaderboard_slug(m.match_id);
      ev::assemble_bank(match_dir + "/bank.sqlite", {{bank_of.at(m.a), m.a}, {bank_of.at(m.b), m.b}}, match_dir);
      ev::TaskBank tb(match_dir + "/bank.sqlite");
      ev::ProtocolConfig pc = protocol;
      pc.work_dir = match_dir + "/play";
      ev::MatchRecord rec =
          ev::play_match(tb, {m.a, agents.at(m.a).get()}, {m.b, agents.at(m.b).get()}, repos, pc, mc, m.match_id);
      out.match_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      ++out.matches_played_now;
      return rec;
    };
    out.played = ev::run_tournament(entry + "/tournament", initial, play, to);
  } else {
    log(id + " is the leaderboard's first participant: its bank, no match");
  }

  // 3. Published: its bank, matches and script, then its record (the commit point), then the rating.
  const std::string bank_sha =
      fs::exists(board.bank_path(id)) ? ev::file_sha256(board.bank_path(id)) : board.install_bank(own_bank, id);
  for (const ev::MatchRecord& m : out.played) board.put_match(m);
  if (!r.script.empty()) write_file_atomic(board.script_path(id), read_file(r.script));
  ev::LeaderboardParticipant p;
  p.id = id;
  p.source = r.source;
  p.origin = "enter";
  p.bank_sha256 = bank_sha;
  board.add_participant(p);
  log(format("%s: %zu matches played", id.c_str(), out.played.size()));
  ev::RankingOptions ro;
  ro.tournament_id = fs::path(board.root()).filename().string();
  ro.format = "leaderboard";
  ro.bootstrap_samples = r.bootstrap;
  ro.seed = r.seed;
  out.rankings = board.refresh(ro);
  for (const auto& [pid, agent] : agents) print_usage(pid, agent.get());
  return out;
}

}  // namespace spade::apps
