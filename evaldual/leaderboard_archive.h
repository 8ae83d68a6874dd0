// Leaderboard contributions: a tar archive of a leaderboard directory's leaderboard.json,
// participants/, banks/ and matches/ (leaderboard_dir.h), written by `spade duel export` and merged
// into another leaderboard by `spade duel import` (SWE-Duel reference §6 "Leaderboard update imports a
// contribution archive (hash guard against double import, path-escape check, size cap), merges records
// additively"). Archives are read and written with libarchive (Debian's libarchive-dev).
//
// Import rules, all checked before anything is written to the target:
//   - hash guard: the archive's SHA-256 is recorded in DIR/imports.json; an archive already recorded
//     is refused, naming when and from where it was imported;
//   - path escape: every entry must be a regular file (or a directory) at "leaderboard.json" or one
//     level under participants/, banks/ or matches/; an absolute path, a ".." component, a link
//     (symbolic or hard) or a device is refused, naming the entry;
//   - size cap: the archive file and the sum of its entries' bytes as read (not as declared) are each
//     at most ImportLimits::max_bytes, and it has at most max_entries entries;
//   - consistency: its leaderboard.json has the target's repos and turns per player; every participant
//     file is named by its id's slug and its bank's SHA-256 is the one it records; every match parses,
//     is named by its id's slug, and both its sides are participants of the archive or the target;
//   - additive merge: a participant, bank, script or match whose file exists in the target is skipped
//     when byte-identical (the same incumbent exported from a shared history) and refused otherwise
//     ("conflicting id"); nothing in the target is ever overwritten.
// Files are moved in as banks and scripts, then matches, then participant files (their commit point),
// then the imports.json record, so an import killed at any point is finished by running it again.
//
// Thread-safety: the caller holds the target's LeaderboardLock.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "evaldual/leaderboard_dir.h"

namespace spade::evaldual {

/// Writes `out` (a tar archive, atomically) holding `board`'s leaderboard.json and every file under
/// participants/, banks/ and matches/, in name order with fixed metadata (mtime 0, mode 0644), so the
/// same leaderboard gives the same bytes. Returns the archive's SHA-256. Throws spade::Error naming the
/// path on an I/O failure.
std::string export_contribution(const LeaderboardDir& board, const std::string& out);

/// Caps of an import. Defaults: 1 GiB and 100000 entries (ours: far above a leaderboard of a few
/// hundred participants' banks, far below what would fill a disk).
struct ImportLimits {
  uint64_t max_bytes = uint64_t{1} << 30;
  uint64_t max_entries = 100000;
};

/// What an import added.
struct ImportResult {
  std::string sha256;
  std::vector<std::string> participants_added;  // ids
  int matches_added = 0;
  int identical_skipped = 0;  // files already in the target, byte for byte
};

/// Merges the contribution at `archive` into `board` (see the file comment); the caller then refreshes
/// the rankings. Throws spade::Error naming the archive and the entry on any refusal; nothing is
/// written to the target then (the staging folder under work/ is removed).
ImportResult import_contribution(const LeaderboardDir& board, const std::string& archive,
                                 const ImportLimits& limits = {});

}  // namespace spade::evaldual
