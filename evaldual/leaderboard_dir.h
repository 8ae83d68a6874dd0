// The SWE-Duel leaderboard directory (DESIGN.md "Leaderboard": participants, banks, matches,
// rankings.json and a static page, extended by late entrants and imported contributions without
// changing incumbents' banks; SWE-Duel reference §6 "Leaderboard update"). Layout:
//   DIR/leaderboard.json                 the arena: {"format": "spade-duel-leaderboard", "version": 1,
//                                        "repos": [names], "specs": [absolute repo spec paths],
//                                        "turns_per_player": N}
//   DIR/participants/<slug>.json         one participant: {"id", "source", "origin", "added_at",
//                                        "bank_sha256"}; written last, so its presence means the
//                                        participant, its bank and its matches are complete
//   DIR/participants/<slug>.script.json  the replay script of a scripted participant (protocol.h)
//   DIR/banks/<slug>.sqlite              the participant's own task bank: its slots and admitted
//                                        tasks (task_bank.h copy_red_tasks; Red attempts and their
//                                        trajectories stay in the bank they were made in); written
//                                        once, never opened for writing again
//   DIR/matches/<slug>.json              one finished match record (match_record.h object form)
//   DIR/imports.json                     the SHA-256 of every imported archive (leaderboard_archive.h)
//   DIR/rankings.json, DIR/leaderboard.html   the rating of every match (rankings.h, leaderboard_page.h)
//   DIR/work/                            scratch: prepared repositories, entrants' progress, per-match
//                                        banks; never exported
//   DIR/.lock                            flock(2) target: one writer at a time
// <slug> is a file name made from an id (participant or match id): the id with every byte outside
// [A-Za-z0-9._-] replaced by '_' (a leading '.' too), then '-' and the first 12 hex digits of the id's
// SHA-256, so distinct ids never share a file and no id escapes its folder.
// Every file is written atomically (temp + rename). A match is played on a bank assembled for it
// under work/ from copies of its two sides' banks, so a match never writes to any participant's bank.
//
// Thread-safety: a LeaderboardDir is a handle on paths; writes from several processes are serialised
// by holding a LeaderboardLock, which every writing command takes first.
#pragma once
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "evaldual/match_record.h"
#include "evaldual/rankings.h"

namespace spade::evaldual {

/// What every match of a leaderboard is played on.
struct LeaderboardArena {
  std::vector<std::string> repos;  // repository names (repo_spec.h), in spec order
  std::vector<std::string> specs;  // absolute paths of the repo spec YAML files
  int turns_per_player = 1;        // duel_match.h MatchConfig::turns_per_player
};

/// Whether matches of `a` and `b` are comparable: the same repositories (by name, in order) and turns
/// per player (spec paths may differ between machines).
bool same_arena(const LeaderboardArena& a, const LeaderboardArena& b);
/// "repos [..], N turns per player", for messages.
std::string describe_arena(const LeaderboardArena& a);

/// One participant of a leaderboard.
struct LeaderboardParticipant {
  std::string id;          // canonical participant id (participant.h): its name in banks and matches
  std::string source;      // the participant id its agent is resolved from (an endpoint's, or checkpoint:DIR)
  std::string origin;      // how it joined its first leaderboard: "tournament ID" or "enter" (an import
                           // keeps the record byte for byte; imports.json lists what each archive added)
  std::string added_at;    // ISO 8601 UTC
  std::string bank_sha256;  // of banks/<slug>.sqlite when it was added
};
nlohmann::json to_json(const LeaderboardParticipant& p);
/// Throws spade::Error naming `where` and the key on a malformed document.
LeaderboardParticipant leaderboard_participant_from_json(const nlohmann::json& j, const std::string& where);

/// The file-name slug of an id (see the file comment). Pure.
std::string leaderboard_slug(const std::string& id);

/// The SHA-256 (hex) of a file's bytes. Throws spade::Error naming the path when it cannot be read.
std::string file_sha256(const std::string& path);

/// Writes a task bank at `dest` holding, for each (bank file, participant id) of `sides`, that
/// participant's slots and admitted tasks (task_bank.h copy_red_tasks), read from a copy of the bank
/// file (and its WAL) made under `scratch_dir`, so a source file is never opened, let alone written.
/// Built under `scratch_dir` and renamed to `dest` (same file system), so an existing `dest` is
/// complete: then it returns false and does nothing. Throws spade::Error on an I/O or bank error.
bool assemble_bank(const std::string& dest, const std::vector<std::pair<std::string, std::string>>& sides,
                   const std::string& scratch_dir);

class LeaderboardDir {
 public:
  /// Creates the layout in `dir` (absent, or empty but for .lock) with `arena`, or opens it when `dir` already is a
  /// leaderboard with the same repos and turns. Throws spade::Error naming `dir` when it holds other
  /// files, or a leaderboard of another arena.
  static LeaderboardDir create(const std::string& dir, const LeaderboardArena& arena);
  /// Opens an existing leaderboard. Throws spade::Error naming `dir` when leaderboard.json is missing
  /// or malformed (and saying how one is made).
  static LeaderboardDir open(const std::string& dir);
  /// Whether `dir` holds a leaderboard.json.
  static bool is_leaderboard(const std::string& dir);

  const std::string& root() const { return root_; }
  const LeaderboardArena& arena() const { return arena_; }

  /// Every complete participant (participants/*.json), sorted by id. Throws on a malformed file.
  std::vector<LeaderboardParticipant> participants() const;
  std::optional<LeaderboardParticipant> find(const std::string& id) const;
  /// Writes participants/<slug>.json (the participant's commit point). Throws spade::Error when the
  /// participant exists, or its bank file is missing.
  void add_participant(LeaderboardParticipant p) const;

  std::string participant_path(const std::string& id) const;
  std::string bank_path(const std::string& id) const;
  std::string script_path(const std::string& id) const;
  std::string match_path(const std::string& match_id) const;
  std::string rankings_path() const { return root_ + "/rankings.json"; }
  std::string page_path() const { return root_ + "/leaderboard.html"; }
  std::string imports_path() const { return root_ + "/imports.json"; }
  std::string work_path() const { return root_ + "/work"; }

  /// Installs a participant's bank: `red`'s slots and tasks from `source_bank` into banks/<slug>.sqlite
  /// (assemble_bank, scratch under work/). Returns its SHA-256. Throws spade::Error when the bank
  /// already exists.
  std::string install_bank(const std::string& source_bank, const std::string& red) const;

  /// Every match record in matches/, sorted by match id. Throws naming the file on a malformed one or
  /// one not named by its match id's slug.
  std::vector<MatchRecord> matches() const;
  /// Writes matches/<slug>.json. An existing file with the same content is left alone (a resumed
  /// command re-saves what it saved); one with other content is refused (spade::Error).
  void put_match(const MatchRecord& m) const;

  /// Rates every match (with every participant listed) and writes rankings.json and leaderboard.html
  /// atomically. `options.participants` is filled here; the rest is the caller's. Returns the rating.
  Rankings refresh(RankingOptions options) const;

 private:
  LeaderboardDir(std::string root, LeaderboardArena arena) : root_(std::move(root)), arena_(std::move(arena)) {}
  std::string root_;
  LeaderboardArena arena_;
};

/// An exclusive flock(2) on DIR/.lock for the lifetime of the object; the kernel drops it when the
/// process dies (kill -9 included), so a rerun after a crash is never locked out. Throws spade::Error
/// naming the directory when another process holds it.
class LeaderboardLock {
 public:
  explicit LeaderboardLock(const std::string& dir);
  ~LeaderboardLock();
  LeaderboardLock(const LeaderboardLock&) = delete;
  LeaderboardLock& operator=(const LeaderboardLock&) = delete;

 private:
  int fd_ = -1;
};

}  // namespace spade::evaldual
