// The SWE-Duel leaderboard as one self-contained web page: a static HTML file with inline SVG charts,
// no script and no external resource (its Content-Security-Policy is default-src 'none', so a browser
// fetches nothing when it opens the file). SWE-Duel publishes its leaderboard as a static page
// (docs/sources.md, SWE-Duel reference §6); this is ours, rendered from the rankings (rankings.h).
//
// Sections, in order (a section whose data the rankings lack says so in one line instead of a chart):
//   - the leaderboard table: rank, participant, BT log-strength with its 95% bootstrap interval,
//     Elo (interval), Red / Blue Elo, TrueSkill mu ± sigma, contested BT (interval), W-D-L, points,
//     bootstrap median rank and rank interval, and the marks of ratings that are not valid ones
//     (rankings_notes() explains them under the table);
//   - a chart of BT log-strengths with interval bars (one row per participant), and one of contested BT;
//     a value or interval that is not a valid rating (bt_value_mark / bt_interval_mark) is starred;
//   - per-role win rates: per participant, the share of contested Red turns Red won and of contested
//     Blue turns Blue won, with counts; missing-task auto-wins counted apart (paper §3.4);
//   - rank histograms: per participant, the share of bootstrap draws at each rank;
//   - the head-to-head matrix (row vs column: wins-draws-losses) and the Red x Blue matrix (row as Red,
//     column as Blue: Blue's wins / contested turns);
//   - tokens and cost per match, from the match records' "tokens" and "cost" keys (or the sums of their
//     turns' keys), when any record carries them.
// Every participant id and other text from the rankings is HTML-escaped. Each leaderboard row is a
// <tr class="participant" data-rank=...> and each chart row a <g class="bar" data-participant=...>, so
// a browser test can count what rendered. Numbers use report.h's formats.
//
// Thread-safety: a pure function; thread-safe.
#pragma once
#include <string>

#include "evaldual/rankings.h"

namespace spade::evaldual {

/// The page (UTF-8 HTML5 document, common/html.h's skeleton) for `r`.
std::string leaderboard_html(const Rankings& r);

}  // namespace spade::evaldual
