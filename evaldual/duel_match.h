// SWE-Duel matches (paper §3.4; reference §3 "Match"): two participants defend each other's banked
// tasks on every repository. Per repository and side the first turns_per_player tasks in bank order;
// turns interleave (B defends A's task i, then A defends B's task i). A missing Red task is a synthetic
// Blue win (auto_win, reason red_missing_challenge). A defense whose harness failed is dropped without
// credit. Totals: red_composite on one's Red turns + blue_composite on one's Blue turns; a draw when the
// totals differ by less than draw_margin (0.25: exact ties, since turns are binary).
// Defenses are cached in the bank keyed by (task, Blue identity): a replayed match re-scores nothing.
// A match without a single contested turn (every turn an automatic win, or every defense dropped)
// carries no information about either side: its record says so (extra "warning", and
// contested_turns() == 0), and `spade duel match` fails on it.
// Spend: each played turn's extra holds its Blue session's "cost" (USD) and "tokens" (0 when the defense
// cache answered), the match's extra their sums; the Red sessions' spend is on the task (TaskRecord).
//
// Turns are played by MatchConfig::workers threads at once (each turn's Blue session and scoring run in
// their own directories) and recorded in schedule order, so the record is the same for any worker count.
//
// Thread-safety: play_match() is reentrant for distinct work directories; the bank is thread-safe;
// both agents' open_session() is called from several threads.
#pragma once
#include <string>
#include <vector>

#include "evaldual/match_record.h"
#include "evaldual/protocol.h"

namespace spade::evaldual {

/// Match settings. turns_per_player: the reference's arena file says 3 but banks 1 task per repository,
/// so 2 of its 3 turns per side are automatic Blue wins out of the box; ours is 1, equal to
/// ProtocolConfig::slots_per_repo (reference §7: 1 target per repository), and `spade duel match` refuses
/// more turns than a participant has slots.
struct MatchConfig {
  int turns_per_player = 1;   // N: tasks per repository per side
  int workers = 5;            // turns played at once (reference §7: 5 workers); the record does not depend on it
  double draw_margin = 0.25;
  bool use_defense_cache = true;
};

/// One side of a match.
struct MatchSide {
  std::string id;             // Participant id
  Agent* agent = nullptr;     // plays Blue (not owned)
};

/// Turns of `m` that were played (not missing-task auto-wins).
int contested_turns(const MatchRecord& m);

/// Plays a match over `repos` with tasks from `bank`; returns it in the ratings layer's record form
/// (evaldual/match_record.h), each turn's extra holding s_regression, s_feature, s_bugfix, outcome,
/// detail and reason; with no contested turn the record's extra "warning" says so. Throws spade::Error
/// for a stale task (evaldual/repo_spec.h check_not_stale).
MatchRecord play_match(TaskBank& bank, const MatchSide& a, const MatchSide& b, const std::vector<PreparedRepo>& repos,
                       const ProtocolConfig& protocol, const MatchConfig& config, const std::string& match_id);

}  // namespace spade::evaldual
