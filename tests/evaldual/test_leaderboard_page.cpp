// The leaderboard page (evaldual/leaderboard_page.h): its numbers on a hand-built tournament, and the
// page loaded in headless Chromium: every participant's row and chart marks rendered, nothing fetched.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "evaldual/leaderboard_page.h"
#include "tests/testing/chromium_page.h"

namespace spade::evaldual {
namespace {

namespace fs = std::filesystem;

TurnRecord turn(const std::string& red, const std::string& blue, double bc, bool auto_win = false) {
  TurnRecord t;
  t.red = red, t.blue = blue, t.blue_composite = bc, t.auto_win = auto_win, t.repo = "r";
  return t;
}

MatchRecord match(const std::string& id, const std::string& a, const std::string& b, Outcome o,
                  std::vector<TurnRecord> turns) {
  MatchRecord m;
  m.match_id = id, m.model_a = a, m.model_b = b, m.outcome = o, m.turns = std::move(turns);
  m.timestamp = "2026-12-04T10:00:0" + id.substr(1) + "Z";
  return m;
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++n;
  return n;
}

int occurrences_in_row(const std::string& html, const std::string& row_start, const std::string& what) {
  const size_t a = html.find(row_start);
  if (a == std::string::npos) return -1;
  const size_t b = html.find("</tr>", a);
  return static_cast<int>(count(html.substr(a, b - a), what));
}

// Three participants, three matches; every figure below is counted by hand from these turns.
//   m1 a-b: (red a, blue b, S_Blue 0): a wins as Red; (red b, blue a, 1): a wins as Blue. a_wins.
//   m2 b-c: (red b, blue c, 1): c wins as Blue; (red c, blue b, 1): b wins as Blue. draw.
//   m3 a-c: (red a, blue c, 0): a wins as Red; (red c, blue a): c had no task, auto-win for a. a_wins.
// Roles (contested turns only): a as Red 2/2, as Blue 1/1, 1 auto-win; b as Red 0/2, as Blue 1/2;
// c as Red 0/1, as Blue 1/2. Red x Blue (Blue's wins / turns): a->b 0/1, b->a 1/1, b->c 1/1,
// c->b 1/1, a->c 0/1, c->a none (auto-win only). Cost: m1 0.25 + 0.5 from its turns (tokens 100 + 200),
// m2 1.0 on the match, m3 none: total 1.75 USD, 300 tokens.
TEST(LeaderboardPage, FiguresOfAHandBuiltTournament) {
  const std::string a = "a#h", b = "b#h", c = "c#h";
  std::vector<MatchRecord> ms = {
      match("m1", a, b, Outcome::kAWins, {turn(a, b, 0), turn(b, a, 1)}),
      match("m2", b, c, Outcome::kDraw, {turn(b, c, 1), turn(c, b, 1)}),
      match("m3", a, c, Outcome::kAWins, {turn(a, c, 0), turn(c, a, 1, true)}),
  };
  ms[0].turns[0].extra = {{"cost", 0.25}, {"tokens", 100}};
  ms[0].turns[1].extra = {{"cost", 0.5}, {"tokens", 200}};
  ms[1].extra = {{"cost", 1.0}};
  RankingOptions o;
  o.bootstrap_samples = 50;
  o.tournament_id = "hand <built>";
  const std::string html = leaderboard_html(compute_rankings(ms, o));

  EXPECT_EQ(count(html, "<tr class=\"participant\""), 3u);
  // a never lost: its BT value is not identified (+inf; rankings.h), so its chart label is starred and
  // the star explained; b's and c's values are finite.
  EXPECT_NE(html.find(">a#h *</text>"), std::string::npos);
  EXPECT_NE(html.find("* not a valid rating"), std::string::npos);
  EXPECT_NE(html.find("<title>SWE-Duel leaderboard: hand &lt;built&gt;</title>"), std::string::npos);
  EXPECT_NE(html.find("default-src 'none'"), std::string::npos);
  EXPECT_EQ(html.find("http:"), std::string::npos);
  EXPECT_EQ(html.find("https:"), std::string::npos);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  // Win rates by role: the rows of the roles table.
  const std::string roles = html.substr(html.find("<table class=\"roles\">"));
  EXPECT_EQ(occurrences_in_row(roles, "<tr><td class=\"id\">a#h", "100% (2/2)"), 1);
  EXPECT_EQ(occurrences_in_row(roles, "<tr><td class=\"id\">a#h", "100% (1/1)"), 1);
  EXPECT_EQ(occurrences_in_row(roles, "<tr><td class=\"id\">a#h", "</svg> "), 2);
  EXPECT_NE(roles.find("<tr><td class=\"id\">a#h</td>"), std::string::npos);
  EXPECT_EQ(occurrences_in_row(roles, "<tr><td class=\"id\">b#h", "0% (0/2)"), 1);
  EXPECT_EQ(occurrences_in_row(roles, "<tr><td class=\"id\">b#h", "50% (1/2)"), 1);
  EXPECT_EQ(occurrences_in_row(roles, "<tr><td class=\"id\">c#h", "0% (0/1)"), 1);
  EXPECT_EQ(occurrences_in_row(roles, "<tr><td class=\"id\">c#h", "50% (1/2)"), 1);
  EXPECT_NE(roles.find("<td>1</td></tr>"), std::string::npos);  // a's auto-win
  // Red x Blue: row = Red, in rank order a, b, c (a won both matches; b and c drew, b lost to a, c lost to a).
  const std::string rb = html.substr(html.find("<table class=\"matrix redblue\">"));
  EXPECT_EQ(occurrences_in_row(rb, "<tr><th>a#h</th>", "0/1"), 2);
  EXPECT_EQ(occurrences_in_row(rb, "<tr><th>b#h</th>", "1/1"), 2);
  EXPECT_EQ(occurrences_in_row(rb, "<tr><th>c#h</th>", "1/1"), 1);
  EXPECT_EQ(occurrences_in_row(rb, "<tr><th>c#h</th>", "<td></td>"), 1);  // c -> a: auto-win only
  // Head to head: a 1-0-0 against b and c; b 0-1-0 against c.
  const std::string h2h = html.substr(html.find("<table class=\"matrix h2h\">"));
  EXPECT_EQ(occurrences_in_row(h2h, "<tr><th>a#h</th>", ">1-0-0<"), 2);
  EXPECT_EQ(occurrences_in_row(h2h, "<tr><th>b#h</th>", ">0-1-0<"), 1);
  EXPECT_EQ(occurrences_in_row(h2h, "<tr><th>b#h</th>", ">0-0-1<"), 1);
  // Tokens and cost.
  const std::string costs = html.substr(html.find("<table class=\"costs\">"));
  EXPECT_EQ(occurrences_in_row(costs, "<tr><td>m1</td>", "<td>300</td><td>0.7500</td>"), 1);
  EXPECT_EQ(occurrences_in_row(costs, "<tr><td>m2</td>", "</td><td>1.0000</td>"), 1);
  EXPECT_EQ(occurrences_in_row(costs, "<tr class=\"total\">", "<td>300</td><td>1.7500</td>"), 1);
}

TEST(LeaderboardPage, SaysWhatIsMissingInsteadOfDrawingIt) {
  // Matches without turns, cost or tokens and no bootstrap.
  std::vector<MatchRecord> ms = {match("m1", "a#h", "b#h", Outcome::kAWins, {}),
                                 match("m2", "a#h", "b#h", Outcome::kBWins, {})};
  RankingOptions o;
  o.bootstrap_samples = 0;
  const std::string html = leaderboard_html(compute_rankings(ms, o));
  EXPECT_NE(html.find("No match record carries turns: no contested fit."), std::string::npos);
  EXPECT_NE(html.find("No bootstrap: no rank histograms."), std::string::npos);
  EXPECT_NE(html.find("No match record carries tokens or cost."), std::string::npos);
  EXPECT_EQ(count(html, "<svg class=\"chart"), 1u);  // BT only
}

// Four participants; in each pair the lower index wins 3 of 4 matches (so no one is unbeaten and
// every BT rating is finite), each match with one turn per side.
std::vector<MatchRecord> four_player_round_robin() {
  const std::vector<std::string> p = {"p0#mini-swe-agent", "p1#mini-swe-agent", "p2#codex", "p3#codex"};
  std::vector<MatchRecord> ms;
  int n = 0;
  for (size_t i = 0; i < p.size(); ++i)
    for (size_t j = i + 1; j < p.size(); ++j)
      for (int k = 0; k < 4; ++k) {
        const bool i_wins = k != 3;
        const std::string &w = i_wins ? p[i] : p[j], &l = i_wins ? p[j] : p[i];
        ++n;
        MatchRecord m = match("m" + std::to_string(n), p[i], p[j], i_wins ? Outcome::kAWins : Outcome::kBWins,
                              {turn(w, l, 0), turn(l, w, 1)});
        m.timestamp = "2026-12-04T10:" + std::string(n < 10 ? "0" : "") + std::to_string(n) + ":00Z";
        ms.push_back(m);
      }
  return ms;
}

TEST(LeaderboardPage, RendersInChromiumAndFetchesNothing) {
  const fs::path dir = fs::path(SPADE_TEST_TMP) / "leaderboard_page";
  fs::remove_all(dir);
  fs::create_directories(dir / "good");
  fs::create_directories(dir / "control");
  RankingOptions o;
  o.bootstrap_samples = 200;
  const Rankings r = compute_rankings(four_player_round_robin(), o);
  ASSERT_EQ(r.rankings.size(), 4u);
  int with_ci = 0;  // interval bars to expect per chart: finite, non-degenerate intervals
  for (const RankingEntry& e : r.rankings)
    with_ci += e.bradley_terry.ci && std::isfinite(e.bradley_terry.ci->first) &&
               e.bradley_terry.ci->second - e.bradley_terry.ci->first > 0.05;
  ASSERT_EQ(with_ci, 4) << "the fixture should give every participant a proper interval";
  {
    std::ofstream((dir / "good/page.html").string()) << leaderboard_html(r);
  }
  const testing::RenderedPage page =
      testing::render_in_chromium((dir / "good/page.html").string(), (dir / "good").string());
  EXPECT_TRUE(page.page_requests.empty()) << page.page_requests.front();
  EXPECT_EQ(count(page.dom, "<tr class=\"participant\""), 4u);
  for (const RankingEntry& e : r.rankings) EXPECT_NE(page.dom.find(e.participant.id()), std::string::npos);
  // What was drawn: the interval bars (#4e79a7) and the dots (#e15759) of the BT and contested charts,
  // one horizontal band per participant per chart.
  EXPECT_EQ(page.color_bands(0x4e, 0x79, 0xa7), 8);
  EXPECT_EQ(page.color_bands(0xe1, 0x57, 0x59, 3), 8);
  RecordProperty("screenshot", (dir / "good/screenshot.png").string());

  // The control: the same detector sees a page that does fetch (no Content-Security-Policy).
  {
    std::ofstream((dir / "control/page.html").string())
        << "<!DOCTYPE html><html><body><img src=\"http://127.0.0.1:9/pixel.png\"></body></html>";
  }
  const testing::RenderedPage control =
      testing::render_in_chromium((dir / "control/page.html").string(), (dir / "control").string(), 400, 300);
  ASSERT_EQ(control.page_requests.size(), 1u);
  EXPECT_EQ(control.page_requests[0], "http://127.0.0.1:9/pixel.png");
}

}  // namespace
}  // namespace spade::evaldual
