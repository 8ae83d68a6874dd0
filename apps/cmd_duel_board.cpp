// `spade duel ...` on a leaderboard directory (evaldual/leaderboard_dir.h):
//   spade duel enter SOURCE --name ID --leaderboard DIR [--script FILE.json] [--endpoints FILE.yaml]
//                    [--attempts N] [--workers N] [--bootstrap N] [--seed S]
//       The SWE-Duel late entrant (paper §3.4, Appendix S; reference §6): SOURCE (a checkpoint
//       directory, taken as the participant `checkpoint:DIR`, or a participant/endpoint id) plays as
//       ID. It builds its own bank (Red sessions on the leaderboard's repositories), then plays
//       ceil(log2 M)+1 matches clamped to [3, M] (M incumbents) against incumbents picked one at a
//       time by active sampling (evaldual/schedule.h), on the incumbents' banks and earlier results,
//       which it never changes; then the whole leaderboard is re-rated and rankings.json and the page
//       rewritten. Incumbents play Blue on the entrant's tasks as their records say (a stored replay
//       script, else their source id through --endpoints). Killed at any point, the same command
//       resumes: finished Red attempts and matches are not replayed.
//   spade duel import ARCHIVE --leaderboard DIR [--max-bytes N]
//       Merges a contribution (evaldual/leaderboard_archive.h), then re-rates.
//   spade duel export --leaderboard DIR --out FILE.tar [--overwrite]
//       Writes DIR's contribution archive (what `import` reads).
// A leaderboard is made by `spade duel tournament ... --leaderboard DIR` (publish_tournament below).
#include <CLI/CLI.hpp>

#include <cstdio>
#include <filesystem>
#include <limits>
#include <map>
#include <memory>

#include "apps/commands.h"
#include "apps/duel_board.h"
#include "common/atomic_file.h"
#include "common/error.h"
#include "common/output_path.h"
#include "evaldual/duel_match.h"
#include "evaldual/leaderboard_archive.h"
#include "evaldual/participant.h"
#include "evaldual/repo_spec.h"
#include "evaldual/task_bank.h"
#include "evaldual/tournament.h"

namespace fs = std::filesystem;
namespace ev = spade::evaldual;

namespace spade::apps {

ev::Rankings publish_tournament(const std::string& dir, const ev::LeaderboardArena& arena,
                                const std::vector<std::string>& players,
                                const std::map<std::string, std::string>& script_of, const std::string& bank,
                                const std::vector<ev::MatchRecord>& matches, const std::string& tournament_id,
                                ev::RankingOptions ro) {
  ev::LeaderboardLock lock(dir);
  ev::LeaderboardDir board = ev::LeaderboardDir::create(dir, arena);
  std::vector<ev::LeaderboardParticipant> added;
  for (const std::string& id : players) {
    if (board.find(id)) continue;  // published by an earlier run: never replaced
    ev::LeaderboardParticipant p;
    p.id = id;
    p.source = id;
    p.origin = "tournament " + tournament_id;
    p.bank_sha256 = fs::exists(board.bank_path(id)) ? ev::file_sha256(board.bank_path(id)) : board.install_bank(bank, id);
    auto it = script_of.find(id);
    if (it != script_of.end()) write_file_atomic(board.script_path(id), read_file(it->second));
    added.push_back(p);
  }
  for (const ev::MatchRecord& m : matches) board.put_match(m);
  for (const ev::LeaderboardParticipant& p : added) board.add_participant(p);
  return board.refresh(std::move(ro));
}

namespace {

struct RatingArgs {
  int bootstrap = 1000;
  uint64_t seed = 42;
};

void add_rating_options(CLI::App* cmd, RatingArgs* r) {
  cmd->add_option("--bootstrap", r->bootstrap, "bootstrap draws of the rating (0 = none)")
      ->check(CLI::Range(0, std::numeric_limits<int>::max()));
  cmd->add_option("--seed", r->seed, "bootstrap seed");
}

// Re-rates the leaderboard and prints the table.
void refresh_and_print(const ev::LeaderboardDir& board, const RatingArgs& ra) {
  ev::RankingOptions ro;
  ro.tournament_id = fs::path(board.root()).filename().string();
  ro.format = "leaderboard";
  ro.bootstrap_samples = ra.bootstrap;
  ro.seed = ra.seed;
  ev::Rankings r = board.refresh(ro);
  std::fputs(ev::rankings_table(r).c_str(), stdout);
  std::printf("%zu participants, %zu matches -> %s, %s\n", r.rankings.size(), r.matches.size(),
              board.rankings_path().c_str(), board.page_path().c_str());
}

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

void add_enter_command(CLI::App* duel) {
  struct Args {
    std::string source, name, dir, script, endpoints;
    int attempts = ev::ProtocolConfig{}.attempts_per_slot;
    int workers = ev::MatchConfig{}.workers;
    RatingArgs rating;
  };
  auto a = std::make_shared<Args>();
  CLI::App* cmd = duel->add_subcommand(
      "enter", "a late entrant: build its bank, play ceil(log2 M)+1 actively sampled incumbents, re-rate");
  cmd->add_option("source", a->source,
                  "CHECKPOINT directory (the participant checkpoint:DIR), or a participant / endpoint id")
      ->required();
  cmd->add_option("--name", a->name, "the entrant's participant id on the leaderboard (model#harness...)")->required();
  cmd->add_option("--leaderboard", a->dir, "leaderboard directory (made by `duel tournament --leaderboard`)")
      ->required();
  cmd->add_option("--script", a->script, "play the entrant from this replay script JSON (else SOURCE's model)");
  cmd->add_option("--endpoints", a->endpoints, "endpoints YAML for SOURCE and for incumbents without a stored script");
  cmd->add_option("--attempts", a->attempts, "Red attempts per slot")->check(CLI::Range(1, 100));
  cmd->add_option("--workers", a->workers, "turns of a match played at once (the records do not depend on it)")
      ->check(CLI::Range(1, 64));
  add_rating_options(cmd, &a->rating);
  cmd->callback([a] {
    set_action([a]() -> int {
      if (!ev::LeaderboardDir::is_leaderboard(a->dir)) {
        std::fprintf(stderr, "error: duel enter: %s is not a leaderboard (no leaderboard.json); make one with `spade "
                             "duel tournament ... --leaderboard %s`\n", a->dir.c_str(), a->dir.c_str());
        return kUsageError;
      }
      ev::LeaderboardLock lock(a->dir);
      const ev::LeaderboardDir board = ev::LeaderboardDir::open(a->dir);
      const std::string id = ev::canonical_participant_id(a->name);
      if (auto p = board.find(id)) {
        std::fprintf(stderr, "error: duel enter: '%s' is already on %s (%s, %s); a participant enters once\n",
                     id.c_str(), a->dir.c_str(), p->origin.c_str(), p->added_at.c_str());
        return kUsageError;
      }
      std::error_code ec;
      const std::string source =
          fs::is_directory(a->source, ec) ? "checkpoint:" + fs::absolute(a->source).lexically_normal().string() : a->source;
      std::vector<std::string> incumbents;
      std::map<std::string, std::unique_ptr<ev::Agent>> agents;
      std::map<std::string, std::string> bank_of;
      for (const ev::LeaderboardParticipant& p : board.participants()) {
        incumbents.push_back(p.id);
        bank_of[p.id] = board.bank_path(p.id);
        const std::string script = fs::exists(board.script_path(p.id)) ? board.script_path(p.id) : "";
        agents[p.id] = make_agent(p.source, script, a->endpoints, "a replay script stored at " + board.script_path(p.id));
      }
      if (incumbents.empty()) {
        std::fprintf(stderr, "error: duel enter: %s has no participant to play against\n", a->dir.c_str());
        return kUsageError;
      }
      agents[id] = make_agent(source, a->script, a->endpoints, "--script");

      const std::vector<ev::PreparedRepo> repos = prepare_arena(board);
      const std::string entry = board.work_path() + "/enter/" + ev::leaderboard_slug(id);
      ev::ProtocolConfig protocol;
      protocol.work_dir = entry + "/play";
      protocol.slots_per_repo = board.arena().turns_per_player;  // the tasks a match asks of each side
      protocol.attempts_per_slot = a->attempts;

      // 1. Its own bank, built under work/ (resumable: finished slots are skipped).
      const std::string own_bank = entry + "/bank.sqlite";
      bank_of[id] = own_bank;
      {
        ev::TaskBank tb(own_bank);
        ev::generate_bank(tb, *agents[id], id, repos, protocol);
        for (const auto& r : repos) {
          const size_t k = tb.task_ids(id, r.spec.name).size();
          std::printf("%s: %zu task%s on %s%s\n", id.c_str(), k, k == 1 ? "" : "s", r.spec.name.c_str(),
                      k == 0 ? " (its Red turns there are automatic Blue wins, paper §3.4)" : "");
        }
      }
      // 2. Its matches: active sampling against the incumbents' results (resumable, tournament.h).
      ev::TournamentOptions to;
      to.seed = a->rating.seed;
      for (const ev::MatchRecord& m : board.matches())
        if (m.model_a != id && m.model_b != id) to.prior_matches.push_back(m);
      to.on_match = [](const ev::MatchRecord& r, int done, int total) {
        std::printf("[%d/%d] %s: %s %.2f - %.2f %s (%s)\n", done, total, r.match_id.c_str(), r.model_a.c_str(),
                    r.score_a.value_or(0), r.score_b.value_or(0), r.model_b.c_str(), ev::outcome_name(r.outcome));
        std::fflush(stdout);
      };
      ev::MatchConfig mc;
      mc.turns_per_player = board.arena().turns_per_player;
      mc.workers = a->workers;
      const ev::TournamentState initial = ev::make_late_entrant_state("enter:" + id, id, incumbents);
      std::printf("%s enters against %zu incumbents: %d matches (ceil(log2 M)+1 in [3, M])\n", id.c_str(),
                  incumbents.size(), initial.budget);
      auto play = [&](const ev::ScheduledMatch& m) {
        // A bank of the match's two sides (its defense cache the match's own, which a resumed match
        // reuses), assembled from copies: no participant's bank is opened.
        const std::string match_dir = board.work_path() + "/matches/" + ev::leaderboard_slug(m.match_id);
        ev::assemble_bank(match_dir + "/bank.sqlite", {{bank_of.at(m.a), m.a}, {bank_of.at(m.b), m.b}}, match_dir);
        ev::TaskBank tb(match_dir + "/bank.sqlite");
        ev::ProtocolConfig pc = protocol;
        pc.work_dir = match_dir + "/play";
        return ev::play_match(tb, {m.a, agents.at(m.a).get()}, {m.b, agents.at(m.b).get()}, repos, pc, mc, m.match_id);
      };
      const std::vector<ev::MatchRecord> played = ev::run_tournament(entry + "/tournament", initial, play, to);

      // 3. Published: its bank, matches and script, then its record (the commit point), then the rating.
      const std::string bank_sha = fs::exists(board.bank_path(id)) ? ev::file_sha256(board.bank_path(id))
                                                                   : board.install_bank(own_bank, id);
      for (const ev::MatchRecord& m : played) board.put_match(m);
      if (!a->script.empty()) write_file_atomic(board.script_path(id), read_file(a->script));
      ev::LeaderboardParticipant p;
      p.id = id;
      p.source = source;
      p.origin = "enter";
      p.bank_sha256 = bank_sha;
      board.add_participant(p);
      std::printf("%s: %zu matches played\n", id.c_str(), played.size());
      refresh_and_print(board, a->rating);
      for (const auto& [pid, agent] : agents) print_usage(pid, agent.get());
      return 0;
    });
  });
}

void add_import_command(CLI::App* duel) {
  struct Args {
    std::string archive, dir;
    uint64_t max_bytes = ev::ImportLimits{}.max_bytes;
    RatingArgs rating;
  };
  auto a = std::make_shared<Args>();
  CLI::App* cmd = duel->add_subcommand("import", "merge a contribution archive into a leaderboard and re-rate it");
  cmd->add_option("archive", a->archive, "contribution tar archive (`spade duel export`)")->required();
  cmd->add_option("--leaderboard", a->dir, "leaderboard directory")->required();
  cmd->add_option("--max-bytes", a->max_bytes, "size cap of the archive and of its contents")
      ->check(CLI::Range(uint64_t{1}, std::numeric_limits<uint64_t>::max()));
  add_rating_options(cmd, &a->rating);
  cmd->callback([a] {
    set_action([a]() -> int {
      if (!ev::LeaderboardDir::is_leaderboard(a->dir)) {
        std::fprintf(stderr, "error: duel import: %s is not a leaderboard (no leaderboard.json)\n", a->dir.c_str());
        return kUsageError;
      }
      ev::LeaderboardLock lock(a->dir);
      const ev::LeaderboardDir board = ev::LeaderboardDir::open(a->dir);
      ev::ImportLimits limits;
      limits.max_bytes = a->max_bytes;
      const ev::ImportResult r = ev::import_contribution(board, a->archive, limits);
      std::string ids;
      for (const auto& id : r.participants_added) ids += (ids.empty() ? "" : ", ") + id;
      std::printf("imported %s (sha256 %s): %zu participants added%s%s, %d matches added, %d identical files "
                  "skipped\n", a->archive.c_str(), r.sha256.c_str(), r.participants_added.size(),
                  ids.empty() ? "" : ": ", ids.c_str(), r.matches_added, r.identical_skipped);
      refresh_and_print(board, a->rating);
      return 0;
    });
  });
}

void add_export_command(CLI::App* duel) {
  struct Args {
    std::string dir, out;
    bool overwrite = false;
  };
  auto a = std::make_shared<Args>();
  CLI::App* cmd = duel->add_subcommand("export", "write a leaderboard's contribution archive (what `duel import` merges)");
  cmd->add_option("--leaderboard", a->dir, "leaderboard directory")->required();
  cmd->add_option("--out", a->out, "tar archive to write (atomically; new or empty unless --overwrite)")->required();
  cmd->add_flag("--overwrite", a->overwrite, "replace a non-empty --out");
  cmd->callback([a] {
    set_action([a]() -> int {
      OutputRule rule;
      rule.what = "duel export --out";
      rule.overwrite = a->overwrite;
      check_output(a->out, OutputKind::file, rule);
      if (!ev::LeaderboardDir::is_leaderboard(a->dir)) {
        std::fprintf(stderr, "error: duel export: %s is not a leaderboard (no leaderboard.json)\n", a->dir.c_str());
        return kUsageError;
      }
      ev::LeaderboardLock lock(a->dir);  // a consistent snapshot: no writer meanwhile
      const ev::LeaderboardDir board = ev::LeaderboardDir::open(a->dir);
      const std::string sha = ev::export_contribution(board, a->out);
      std::printf("%s: %zu participants, %zu matches (sha256 %s)\n", a->out.c_str(), board.participants().size(),
                  board.matches().size(), sha.c_str());
      return 0;
    });
  });
}

}  // namespace

void add_duel_board_commands(CLI::App* duel) {
  add_enter_command(duel);
  add_import_command(duel);
  add_export_command(duel);
}

}  // namespace spade::apps
