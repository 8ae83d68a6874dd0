// evaldual/entry_metrics.h: the duel/* figures of one entrant, on hand-made matches whose rates are
// counted by hand below.
#include <gtest/gtest.h>

#include <cmath>

#include "common/error.h"
#include "evaldual/entry_metrics.h"

namespace spade::evaldual {
namespace {

TurnRecord turn(const std::string& red, const std::string& blue, double s_blue, bool auto_win = false) {
  TurnRecord t;
  t.red = red;
  t.blue = blue;
  t.blue_composite = s_blue;
  t.auto_win = auto_win;
  return t;
}

MatchRecord match(const std::string& id, const std::string& a, const std::string& b, std::vector<TurnRecord> turns) {
  MatchRecord m;
  m.match_id = id;
  m.model_a = a;
  m.model_b = b;
  m.outcome = Outcome::kDraw;
  m.turns = std::move(turns);
  return m;
}

// "e" against "x" and "y":
//   as Red: vs x Blue repaired fully (1.0: Blue wins), vs x Blue partly (0.5: Red wins), vs y an
//     auto-win (not contested) -> 1 of 2 contested Red turns won = 0.5;
//   as Blue: vs x 1.0 (won), vs y 0.0 (lost), vs y 1.0 (won) -> 2 of 3 = 0.667;
//   the x-vs-y turn is not e's and is ignored.
std::vector<MatchRecord> sample() {
  return {match("m1", "e", "x", {turn("e", "x", 1.0), turn("e", "x", 0.5), turn("x", "e", 1.0)}),
          match("m2", "e", "y", {turn("e", "y", 0.0, true), turn("y", "e", 0.0), turn("y", "e", 1.0)}),
          match("m3", "x", "y", {turn("x", "y", 0.0)})};
}

TEST(EntryMetrics, RoleWinRatesCountContestedTurnsOnly) {
  const auto r = role_win_rates(sample(), "e");
  EXPECT_DOUBLE_EQ(r.at("red_win_rate"), 0.5);
  EXPECT_DOUBLE_EQ(r.at("blue_win_rate"), 2.0 / 3.0);
  // z never played: no rate, not a zero.
  const auto none = role_win_rates(sample(), "z");
  EXPECT_TRUE(std::isnan(none.at("red_win_rate")));
  EXPECT_TRUE(std::isnan(none.at("blue_win_rate")));
}

TEST(EntryMetrics, TheEntrantsRatingAndTheCallersCounts) {
  Rankings r;
  RankingEntry e;
  e.participant = Participant::parse("e");
  e.bradley_terry.value = 0.4;
  e.bradley_terry.ci = std::make_pair(-0.3, 1.2);
  r.rankings.push_back(e);
  const auto m = entry_metrics(r, sample(), "e", 3, 12.5);
  EXPECT_DOUBLE_EQ(m.at("duel/bt"), 0.4);
  EXPECT_DOUBLE_EQ(m.at("duel/bt_ci_low"), -0.3);
  EXPECT_DOUBLE_EQ(m.at("duel/bt_ci_high"), 1.2);
  EXPECT_DOUBLE_EQ(m.at("duel/red_win_rate"), 0.5);
  EXPECT_DOUBLE_EQ(m.at("duel/blue_win_rate"), 2.0 / 3.0);
  EXPECT_DOUBLE_EQ(m.at("duel/admitted_tasks"), 3);
  EXPECT_DOUBLE_EQ(m.at("duel/match_s"), 12.5);
  EXPECT_EQ(m.size(), 7u);
  r.rankings[0].bradley_terry.ci.reset();  // no bootstrap: no interval, not a made-up one
  EXPECT_TRUE(std::isnan(entry_metrics(r, sample(), "e", 3, 12.5).at("duel/bt_ci_low")));
  EXPECT_THROW(entry_metrics(r, sample(), "x", 0, 0), Error);
}

}  // namespace
}  // namespace spade::evaldual
