// A resumable tournament driver (paper §3.5: a round robin by the circle method, then late entrants by
// active sampling; reference §6). It owns a tournament directory:
//   DIR/state.json    the schedule and progress (schedule.h TournamentState, written atomically)
//   DIR/matches.json  every finished match record (match_record.h array form, written atomically), the
//                     input of `spade duel rate`
// After each match the record is appended to matches.json FIRST, then the match is marked done in
// state.json. A process killed at any point therefore loses at most the match in progress: on restart,
// a match found in matches.json but not marked done is marked done (never replayed), and play continues
// with the first pending match. Matches are played one at a time in schedule order.
//
// The driver does not know how a match is played: `play` is called with each scheduled match (the CLI
// binds it to play_match() with the participants' agents, the task bank and the repositories).
//
// Thread-safety: one driver per directory at a time (no file locking).
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "evaldual/match_record.h"
#include "evaldual/schedule.h"

namespace spade::evaldual {

/// Plays one scheduled match and returns its record; its match_id must equal the scheduled one.
using PlayMatchFn = std::function<MatchRecord(const ScheduledMatch&)>;

struct TournamentOptions {
  /// Bootstrap draws of the rating used to pick active-sampling opponents (rating_uncertainty());
  /// fewer than for the final leaderboard, as the pick only needs the relative widths.
  int selection_bootstrap = 200;
  uint64_t seed = 42;
  /// Matches played before this tournament (e.g. the incumbents' round robin, for a late entrant): they
  /// count in the ratings that pick active-sampling opponents, and are not written to DIR.
  std::vector<MatchRecord> prior_matches;
  /// Called after each match is saved (progress lines); may be empty.
  std::function<void(const MatchRecord&, int done, int total)> on_match;
};

/// Opens DIR (creating it): loads DIR/state.json if present, else saves `initial` there; a present
/// state must have the same tournament_id and participants as `initial` (else spade::Error: a different
/// tournament lives in DIR). Then plays every pending match (round robin) or, for an active_sampling
/// state, schedules and plays matches until the budget is spent. Returns all records of DIR/matches.json.
/// Throws spade::Error naming the file for a malformed state or matches file, and when `play` returns a
/// record with another match_id; exceptions from `play` propagate after everything finished so far is
/// saved (the next call resumes).
std::vector<MatchRecord> run_tournament(const std::string& dir, const TournamentState& initial,
                                        const PlayMatchFn& play, const TournamentOptions& options = {});

}  // namespace spade::evaldual
