// Leaderboard reports (evaldual/report.h). The expected documents are written out by hand from the
// formats documented in report.h, for a two-participant leaderboard filled in directly (the first
// with a TrueSkill rating, 27.14 +- 6.24 -> "27.1 ± 6.2"; the second without one -> the missing mark).
#include <gtest/gtest.h>

#include "evaldual/report.h"

using namespace spade::evaldual;

namespace {

Rankings two_models() {
  Rankings r;
  r.tournament_id = "demo_1";
  r.bootstrap_samples = 1000;
  r.seed = 42;
  RankingEntry a;
  a.rank = 1;
  a.participant = Participant::parse("gpt-x#mini-swe-agent");
  a.wins = 2;
  a.draws = 1;
  a.losses = 0;
  a.bradley_terry = {0.5349, 1, std::make_pair(-0.104, 1.2), std::nullopt, 0};
  a.elo = {1512.6, 1, std::nullopt, std::nullopt, 0};
  a.trueskill = TrueSkillValue{27.14, 6.24, 27.14 - 3 * 6.24, 1};
  a.bootstrap_median_rank = 1.0;
  RankingEntry b;
  b.rank = 2;
  b.participant = Participant::parse("small_model");
  b.losses = 2;
  b.draws = 1;
  b.bradley_terry = {-0.5349, 2, std::nullopt, std::nullopt, 0};
  b.elo = {1487.4, 2, std::nullopt, std::nullopt, 0};
  r.rankings = {a, b};
  r.head_to_head = {{"gpt-x#mini-swe-agent", "small_model", 2, 0, 1, 3}};
  r.matches.resize(3);
  return r;
}

}  // namespace

TEST(DuelReport, MarkdownTable) {
  const std::string expected =
      "## demo_1\n\n"
      "| Rank | Model | BT score | 95% CI | Elo | TrueSkill | W-D-L | Median rank |\n"
      "|---:|---|---:|---|---:|---:|---|---:|\n"
      "| 1 | gpt-x#mini-swe-agent | +0.53 | [-0.10, +1.20] | 1513 | 27.1 \xC2\xB1 6.2 | 2-1-0 | 1.0 |\n"
      "| 2 | small_model | -0.53 | \xE2\x80\x93 | 1487 | \xE2\x80\x93 | 0-1-2 | \xE2\x80\x93 |\n"
      "\n3 matches; 1000 bootstrap samples (seed 42).\n"
      "\n| A | B | A wins | B wins | Draws |\n|---|---|---:|---:|---:|\n"
      "| gpt-x#mini-swe-agent | small_model | 2 | 0 | 1 |\n";
  EXPECT_EQ(rankings_markdown(two_models()), expected);
}

TEST(DuelReport, LatexTableEscapesNames) {
  const std::string expected =
      "\\begin{table}[t]\n\\centering\n\\begin{tabular}{rlrlrrlr}\n\\toprule\n"
      "Rank & Model & BT score & 95\\% CI & Elo & TrueSkill & W-D-L & Median rank \\\\\n\\midrule\n"
      "1 & gpt-x\\#mini-swe-agent & $+0.53$ & $[-0.10, +1.20]$ & 1513 & $27.1 \\pm 6.2$ & 2-1-0 & 1.0 \\\\\n"
      "2 & small\\_model & $-0.53$ & -- & 1487 & -- & 0-1-2 & -- \\\\\n"
      "\\bottomrule\n\\end{tabular}\n"
      "\\caption{SWE-Duel leaderboard (demo\\_1): Bradley-Terry log-strengths with 95\\% bootstrap intervals "
      "over 3 matches (1000 samples).}\n\\end{table}\n";
  EXPECT_EQ(rankings_latex(two_models()), expected);
}

TEST(DuelReport, LatexEscape) {
  EXPECT_EQ(latex_escape("a_b%c&d#e$f{g}h~i^j\\k"),
            "a\\_b\\%c\\&d\\#e\\$f\\{g\\}h\\textasciitilde{}i\\textasciicircum{}j\\textbackslash{}k");
}

namespace {

// two_models() with the second rating separated (it never beat the first) in the point fit and in
// 600 of the 1000 bootstrap draws: both its value and its interval are marked.
Rankings marked() {
  Rankings r = two_models();
  r.rankings[0].bradley_terry.status = BtStatus::identified;
  r.rankings[1].bradley_terry.status = BtStatus::below;
  r.rankings[1].bradley_terry.ci = std::make_pair(-3.0, -0.2);
  r.rankings[1].bradley_terry.unidentified_draws = 600;
  return r;
}

}  // namespace

TEST(DuelReport, MarkdownMarksRatingsThatAreNotValid) {
  // Written by hand from report.h: a Note column (only because a row has a mark), the marks of
  // rankings.h bt_value_mark / bt_interval_mark, and their explanations as a list after the table.
  const std::string expected =
      "## demo_1\n\n"
      "| Rank | Model | BT score | 95% CI | Elo | TrueSkill | W-D-L | Median rank | Note |\n"
      "|---:|---|---:|---|---:|---:|---|---:|---|\n"
      "| 1 | gpt-x#mini-swe-agent | +0.53 | [-0.10, +1.20] | 1513 | 27.1 \xC2\xB1 6.2 | 2-1-0 | 1.0 |  |\n"
      "| 2 | small_model | -0.53 | [-3.00, -0.20] | 1487 | \xE2\x80\x93 | 0-1-2 | \xE2\x80\x93 | "
      "not identified (-inf); interval not identified in 600 of 1000 draws |\n"
      "\n3 matches; 1000 bootstrap samples (seed 42).\n"
      "\n- not identified (-inf): it never beat the main group, directly or through others, so its maximum-likelihood "
      "strength is -infinity; the number is where the fit stopped at its iteration cap (only its order is meaningful)\n"
      "- interval not identified: in more than 2.5% of the bootstrap draws this rating had no finite maximum-likelihood "
      "estimate on the main group's scale (in that resample its group had all wins or all losses against the rest, or "
      "no games linking it to the main group), so the bounds include values that are not ratings and are not a "
      "confidence interval\n"
      "\n| A | B | A wins | B wins | Draws |\n|---|---|---:|---:|---:|\n"
      "| gpt-x#mini-swe-agent | small_model | 2 | 0 | 1 |\n";
  EXPECT_EQ(rankings_markdown(marked()), expected);
}

TEST(DuelReport, LatexMarksRatingsThatAreNotValid) {
  const std::string expected =
      "\\begin{table}[t]\n\\centering\n\\begin{tabular}{rlrlrrlrl}\n\\toprule\n"
      "Rank & Model & BT score & 95\\% CI & Elo & TrueSkill & W-D-L & Median rank & Note \\\\\n\\midrule\n"
      "1 & gpt-x\\#mini-swe-agent & $+0.53$ & $[-0.10, +1.20]$ & 1513 & $27.1 \\pm 6.2$ & 2-1-0 & 1.0 &  \\\\\n"
      "2 & small\\_model & $-0.53$ & $[-3.00, -0.20]$ & 1487 & -- & 0-1-2 & -- & "
      "not identified (-inf); interval not identified in 600 of 1000 draws \\\\\n"
      "\\bottomrule\n\\end{tabular}\n"
      "\\caption{SWE-Duel leaderboard (demo\\_1): Bradley-Terry log-strengths with 95\\% bootstrap intervals "
      "over 3 matches (1000 samples). Not identified (-inf): it never beat the main group, directly or through "
      "others, so its maximum-likelihood strength is -infinity; the number is where the fit stopped at its iteration "
      "cap (only its order is meaningful). Interval not identified: in more than 2.5\\% of the bootstrap draws this "
      "rating had no finite maximum-likelihood estimate on the main group's scale (in that resample its group had all "
      "wins or all losses against the rest, or no games linking it to the main group), so the bounds include values "
      "that are not ratings and are not a confidence interval.}\n"
      "\\end{table}\n";
  EXPECT_EQ(rankings_latex(marked()), expected);
}

TEST(DuelReport, SharedRanksAreExplained) {
  Rankings r = two_models();
  r.rankings[1].rank = 1;  // a tie
  r.rankings[1].bradley_terry.rank = 1;
  std::string md = rankings_markdown(r);
  EXPECT_NE(md.find("- shared rank: equal ratings share a rank and the next rank skips (standard competition "
                    "ranking: 1, 1, 3)\n"),
            std::string::npos)
      << md;
  EXPECT_EQ(md.find("| Note |"), std::string::npos);  // no row has a mark
}
