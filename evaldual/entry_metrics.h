// The duel figures of one leaderboard entry, logged per scored checkpoint by `spade duel watch`
// (issue 20: duel/bt, duel/bt_ci_low, duel/bt_ci_high, duel/red_win_rate, duel/blue_win_rate,
// duel/admitted_tasks, duel/match_s):
//   bt, bt_ci_low, bt_ci_high  the entrant's Bradley-Terry log-strength on the refit leaderboard and its
//                              95% bootstrap interval (rankings.h; NaN when the rating has no interval)
//   red_win_rate               of the contested turns in which the entrant was Red, the share Red won
//                              (Blue did not fully repair: paper §3.4); NaN when there were none
//   blue_win_rate              of the contested turns in which it was Blue, the share Blue won
//   admitted_tasks             tasks in its own bank (the caller counts them: task_bank.h)
//   match_s                    wall seconds per match it played in this entry (the caller measures)
// Missing-task auto-wins are not contested turns and count in neither rate (paper §3.4).
//
// Thread-safety: pure functions; thread-safe.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "evaldual/match_record.h"
#include "evaldual/rankings.h"

namespace spade::evaldual {

/// The per-role win rates of participant `id` over the turns of `matches` (see the file comment):
/// {"red_win_rate", "blue_win_rate"}. Turns of other participants are ignored.
std::map<std::string, double> role_win_rates(const std::vector<MatchRecord>& matches, const std::string& id);

/// The "duel/..." metrics of entrant `id`: the rankings' BT value and interval, role_win_rates over
/// `matches`, and the caller's `admitted_tasks` and `match_s`. Throws spade::Error when `id` is not in
/// the rankings.
std::map<std::string, double> entry_metrics(const Rankings& rankings, const std::vector<MatchRecord>& matches,
                                            const std::string& id, int admitted_tasks, double match_s);

}  // namespace spade::evaldual
