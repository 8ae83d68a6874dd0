// Leaderboard reports for papers and READMEs: the rankings (rankings.h) rendered as a Markdown table
// or a LaTeX booktabs table, in the layout of the SWE-Duel paper's Table 1 (rank, model, BT score with
// its 95% bootstrap CI, Elo, W-D-L, bootstrap median rank) plus a TrueSkill column (reference §6
// "Elo / Red-Elo / Blue-Elo / TrueSkill / BT tables"), followed by the head-to-head results.
// Used by `spade duel report`. Pure functions; thread-safe.
//
// Number formats: BT log-strengths with 2 decimals and an explicit sign ("+0.53"), CIs as
// "[-0.10, +1.20]", Elo rounded to an integer, TrueSkill as mu and sigma with 1 decimal ("27.1 ± 6.2";
// LaTeX "$27.1 \pm 6.2$"), the median rank with 1 decimal; a missing value is "–"
// (Markdown) or "--" (LaTeX). A rating that is not a valid one (rankings.h bt_value_mark /
// bt_interval_mark: not identified, capped, not comparable, no games, an interval without a finite MLE
// in too many draws, or one every draw agreed on) is marked in a Note column, which appears only when
// some row has a mark, and the marks are explained after the table (Markdown: a list; LaTeX: in the
// caption), as are shared ranks (rankings_notes()). Names are escaped for the target format (Markdown: | and \ ; LaTeX:
// \ { } $ & # ^ _ % ~).
#pragma once
#include <string>

#include "evaldual/rankings.h"

namespace spade::evaldual {

/// A Markdown document: a title line with the tournament id (when set), the leaderboard table, and a
/// head-to-head table (pairs with at least one match).
std::string rankings_markdown(const Rankings& r);

/// A LaTeX fragment (needs \usepackage{booktabs}): a table environment with the leaderboard as a
/// tabular, caption naming the tournament and the number of matches and bootstrap samples.
std::string rankings_latex(const Rankings& r);

/// `text` with LaTeX's special characters escaped (e.g. "a_b" -> "a\_b", "~" -> "\textasciitilde{}").
std::string latex_escape(const std::string& text);

}  // namespace spade::evaldual
