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
#include "apps/duel_enter.h"
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
      const ev::LeaderboardDir board = ev::LeaderboardDir::open(a->dir);
      const std::string id = ev::canonical_participant_id(a->name);
      if (auto p = board.find(id)) {
        std::fprintf(stderr, "error: duel enter: '%s' is already on %s (%s, %s); a participant enters once\n",
                     id.c_str(), a->dir.c_str(), p->origin.c_str(), p->added_at.c_str());
        return kUsageError;
      }
      if (board.participants().empty()) {
        std::fprintf(stderr, "error: duel enter: %s has no participant to play against\n", a->dir.c_str());
        return kUsageError;
      }
      std::error_code ec;
      EnterRequest r;
      r.dir = a->dir;
      r.source = fs::is_directory(a->source, ec) ? "checkpoint:" + fs::absolute(a->source).lexically_normal().string()
                                                 : a->source;
      r.name = a->name;
      r.script = a->script;
      r.attempts = a->attempts;
      r.workers = a->workers;
      r.bootstrap = a->rating.bootstrap;
      r.seed = a->rating.seed;
      const std::string endpoints = a->endpoints;
      r.agent_for = [endpoints](const std::string& source, const std::string& script, const std::string& flag) {
        return make_agent(source, script, endpoints, flag);
      };
      const EnterResult done = enter_leaderboard(r, [](const std::string& line) {
        std::printf("%s\n", line.c_str());
        std::fflush(stdout);
      });
      std::fputs(ev::rankings_table(done.rankings).c_str(), stdout);
      std::printf("%zu participants, %zu matches -> %s, %s\n", done.rankings.rankings.size(),
                  done.rankings.matches.size(), board.rankings_path().c_str(), board.page_path().c_str());
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
