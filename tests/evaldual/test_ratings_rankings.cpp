// Participants, match records and the rankings JSON (evaldual/participant.h, match_record.h,
// rankings.h): parsing, validation errors, round trips, and the leaderboard's pieces agreeing with the
// rating functions they are built from.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "common/atomic_file.h"
#include "common/error.h"
#include "duel_test_util.h"
#include "evaldual/rankings.h"
#include "tests/testing/test_util.h"

using namespace spade::evaldual;
using nlohmann::json;

TEST(Participant, ParsesAndSerialises) {
  Participant p = Participant::parse("gpt-5.5#codex#high#openai");
  EXPECT_EQ(p.model, "gpt-5.5");
  EXPECT_EQ(p.harness, "codex");
  EXPECT_EQ(p.effort, "high");
  EXPECT_EQ(p.provider, "openai");
  EXPECT_EQ(p.id(), "gpt-5.5#codex#high#openai");
  EXPECT_EQ(Participant::parse("kimi#mini-swe-agent").id(), "kimi#mini-swe-agent");
  EXPECT_EQ(Participant::parse("kimi#mini-swe-agent##").id(), "kimi#mini-swe-agent");  // canonical
  EXPECT_EQ(Participant::parse("m#h##openrouter").id(), "m#h##openrouter");
  EXPECT_EQ(Participant::parse("plain").id(), "plain");
  EXPECT_EQ(Participant::parse("m#h#low").id(), "m#h#low#");
  EXPECT_THROW(Participant::parse(""), spade::Error);
  EXPECT_THROW(Participant::parse("#h"), spade::Error);
  EXPECT_THROW(Participant::parse("a#b#c#d#e"), spade::Error);
  EXPECT_THROW(Participant::parse("a #b"), spade::Error);
}

namespace {

json match_json(const std::string& id, const std::string& a, const std::string& b, const std::string& outcome) {
  return {{"match_id", id}, {"model_a", a}, {"model_b", b}, {"outcome", outcome}};
}

std::string error_of(const json& doc) {
  try {
    matches_from_json(doc, "m.json");
  } catch (const spade::Error& e) {
    return e.what();
  }
  return "";
}

// Two participants, one match with turns: A's tasks on two repos, B's on two, one of B's missing.
json match_with_turns() {
  json m = match_json("m1", "A#mini", "B#mini", "a_wins");
  m["timestamp"] = "2026-05-01T10:00:00Z";
  m["score_a"] = 3;
  m["score_b"] = 1;
  m["cost_usd"] = 12.5;  // unknown key: kept
  m["turns"] = json::array({
      {{"red", "A#mini"}, {"blue", "B#mini"}, {"repo", "cjson"}, {"task_id", "t1"}, {"blue_composite", 0}},
      {{"red", "B#mini"}, {"blue", "A#mini"}, {"repo", "cjson"}, {"task_id", "t2"}, {"blue_composite", 1},
       {"s_regression", 1}},
      {{"red", "A#mini"}, {"blue", "B#mini"}, {"repo", "fixture-py"}, {"task_id", "t3"}, {"blue_composite", 1}},
      {{"red", "B#mini"}, {"blue", "A#mini"}, {"repo", "fixture-py"}, {"blue_composite", 1}, {"auto_win", true},
       {"reason", "red_missing_challenge"}},
  });
  return m;
}

}  // namespace

TEST(MatchRecord, ParsesKeepsUnknownKeysAndRoundTrips) {
  json doc = json::array({match_with_turns(), match_json("m2", "B#mini", "C", "draw")});
  std::vector<MatchRecord> ms = matches_from_json(doc, "m.json");
  ASSERT_EQ(ms.size(), 2u);
  EXPECT_EQ(ms[0].outcome, Outcome::kAWins);
  EXPECT_EQ(*ms[0].score_a, 3.0);
  ASSERT_EQ(ms[0].turns.size(), 4u);
  EXPECT_FALSE(ms[0].turns[0].blue_wins());
  EXPECT_TRUE(ms[0].turns[1].blue_wins());
  EXPECT_FALSE(ms[0].turns[3].contested());
  EXPECT_EQ(ms[0].extra["cost_usd"], 12.5);
  EXPECT_EQ(ms[0].turns[3].extra["reason"], "red_missing_challenge");
  EXPECT_EQ(ms[1].outcome, Outcome::kDraw);
  json back = matches_to_json(ms);
  EXPECT_EQ(matches_to_json(matches_from_json(back, "again")), back);
  EXPECT_EQ(back[0]["cost_usd"], 12.5);
  // An object with a "matches" array is accepted too (rankings JSON, tournament export).
  EXPECT_EQ(matches_from_json(json{{"matches", doc}}, "x").size(), 2u);
}

TEST(MatchRecord, ErrorsNameTheRecordAndKey) {
  EXPECT_NE(error_of(json::array({json{{"match_id", "m1"}, {"model_a", "A"}, {"outcome", "draw"}}})).find(
                "m.json: [0]: missing key 'model_b'"),
            std::string::npos);
  EXPECT_NE(error_of(json::array({match_json("m1", "A", "B", "win")})).find("unknown outcome 'win'"), std::string::npos);
  EXPECT_NE(error_of(json::array({match_json("m1", "A", "A", "draw")})).find("both 'A'"), std::string::npos);
  EXPECT_NE(error_of(json::array({match_json("m1", "A", "B", "draw"), match_json("m1", "A", "C", "draw")}))
                .find("duplicate match_id 'm1'"),
            std::string::npos);
  json bad_turn = match_json("m1", "A", "B", "draw");
  bad_turn["turns"] = json::array({{{"red", "A"}, {"blue", "C"}, {"blue_composite", 1}}});
  EXPECT_NE(error_of(json::array({bad_turn})).find("turns[0]"), std::string::npos);
  bad_turn["turns"] = json::array({{{"red", "A"}, {"blue", "B"}, {"blue_composite", 2}}});
  EXPECT_NE(error_of(json::array({bad_turn})).find("outside [0, 1]"), std::string::npos);
  EXPECT_NE(error_of(json{{"rankings", json::array()}}).find("or an object with a \"matches\" array), got an object"),
            std::string::npos);
}

TEST(MatchRecord, TimeOrderUsesTimestampsOnlyWhenAllHaveOne) {
  std::vector<MatchRecord> ms(3);
  ms[0].timestamp = "2026-05-03T00:00:00Z";
  ms[1].timestamp = "2026-05-01T00:00:00Z";
  ms[2].timestamp = "2026-05-02T00:00:00Z";
  EXPECT_EQ(match_time_order(ms), (std::vector<size_t>{1, 2, 0}));
  ms[2].timestamp.clear();
  EXPECT_EQ(match_time_order(ms), (std::vector<size_t>{0, 1, 2}));
}

TEST(MatchRecord, LoadsFilesAndReportsBadJson) {
  std::string dir = spade::evaldual::testing::fresh_dir("match_records");
  spade::write_file_atomic(dir + "/ok.json", json::array({match_json("m1", "A", "B", "b_wins")}).dump());
  EXPECT_EQ(load_matches(dir + "/ok.json")[0].outcome, Outcome::kBWins);
  spade::write_file_atomic(dir + "/bad.json", "[{\"match_id\": ");
  EXPECT_THROW(load_matches(dir + "/bad.json"), spade::Error);
  EXPECT_THROW(load_matches(dir + "/missing.json"), spade::Error);
}

TEST(Rankings, PiecesAgreeWithTheRatingFunctions) {
  json doc = json::array({match_with_turns(), match_json("m2", "B#mini", "C", "draw"),
                          match_json("m3", "C", "A#mini", "b_wins"), match_json("m4", "C", "B#mini", "a_wins")});
  for (int k = 1; k <= 3; ++k) doc[k]["timestamp"] = "2026-05-0" + std::to_string(k + 1) + "T10:00:00Z";
  std::vector<MatchRecord> ms = matches_from_json(doc, "m.json");
  RankingOptions o;
  o.tournament_id = "t";
  o.exported_at = "2026-05-10T00:00:00Z";
  o.bootstrap_samples = 200;
  o.participants = {"D#idle"};  // listed without matches
  Rankings r = compute_rankings(ms, o);
  ASSERT_EQ(r.rankings.size(), 4u);

  // ids sorted: A#mini=0, B#mini=1, C=2, D#idle=3.
  PairwiseCounts c(4);
  c.add(0, 1, 1.0);
  c.add(1, 2, 0.5);
  c.add(2, 0, 0.0);
  c.add(2, 1, 1.0);
  BtFit fit = fit_bradley_terry(c);
  std::vector<double> elo = elo_ratings(4, {{0, 1, 1.0}, {1, 2, 0.5}, {2, 0, 0.0}, {2, 1, 1.0}});
  // TrueSkill in the same order; tests/evaldual/reference/trueskill_ref.py ("rk" lines) gives
  // (mu, sigma, mu - 3 sigma): A (31.734646543665043, 6.367741785560829, 12.631421186982557),
  // B (18.994113458822113, 5.162690447433434, 3.5060421165218116),
  // C (24.168611945799167, 5.049846949102018, 9.019071098493114), D (25, 8.333..., 0): ranks A C B D.
  const double ts_mu[4] = {31.734646543665043, 18.994113458822113, 24.168611945799167, 25.0};
  const double ts_sigma[4] = {6.367741785560829, 5.162690447433434, 5.049846949102018, 25.0 / 3.0};
  const int ts_rank[4] = {1, 3, 2, 4};
  for (const RankingEntry& e : r.rankings) {
    std::string id = e.participant.id();
    int i = id == "A#mini" ? 0 : id == "B#mini" ? 1 : id == "C" ? 2 : 3;
    EXPECT_DOUBLE_EQ(e.bradley_terry.value, fit.scores[i]) << id;
    EXPECT_DOUBLE_EQ(e.elo.value, elo[i]) << id;
    ASSERT_TRUE(e.trueskill) << id;
    EXPECT_NEAR(e.trueskill->mu, ts_mu[i], 1e-9) << id;
    EXPECT_NEAR(e.trueskill->sigma, ts_sigma[i], 1e-9) << id;
    EXPECT_NEAR(e.trueskill->score, ts_mu[i] - 3 * ts_sigma[i], 1e-9) << id;
    EXPECT_EQ(e.trueskill->rank, ts_rank[i]) << id;
    EXPECT_EQ(e.rank, e.bradley_terry.rank);
    ASSERT_TRUE(e.bradley_terry.ci);
    ASSERT_TRUE(e.rank_interval);
    int total = 0;
    for (int h : e.rank_histogram) total += h;
    EXPECT_EQ(total, 200);
    ASSERT_TRUE(e.contested_bt);  // the input has turns
  }
  const RankingEntry& a = r.rankings[0];
  EXPECT_EQ(a.participant.id(), "A#mini");  // 2-0
  EXPECT_EQ(a.wins, 2);
  EXPECT_EQ(a.points, 2.0);
  // A never lost (beat B and C): not identified, above the main group {B, C}, first. D never played:
  // score 0 by convention, marked no_games, ranked by that 0 between C (+) and B (-) (the mark says
  // the number is not a rating; bradley_terry.h).
  EXPECT_EQ(a.bradley_terry.status, BtStatus::above);
  const RankingEntry& d = r.rankings[2];
  EXPECT_EQ(d.participant.id(), "D#idle");
  EXPECT_EQ(d.matches_played, 0);
  EXPECT_EQ(d.bradley_terry.value, 0.0);
  EXPECT_EQ(d.bradley_terry.status, BtStatus::no_games);
  EXPECT_EQ(r.rankings[1].participant.id(), "C");
  EXPECT_EQ(r.rankings[1].bradley_terry.status, BtStatus::identified);
  // {B, C}: one draw and C's win, so C has 1.5 of 2: p_C / p_B = 3, centred: +-log(3)/2 (by hand).
  EXPECT_NEAR(r.rankings[1].bradley_terry.value, 0.5 * std::log(3.0), 1e-5);
  EXPECT_EQ(a.bradley_terry.unidentified_draws, 200);  // A has no loss in any resample
  EXPECT_FALSE(a.bradley_terry.ci_valid(200));

  // Contested BT: the auto-win turn is left out. Contested turns (Red vs Blue, Red scores 1 iff Blue
  // failed): A red beats B (t1), B red loses to A (t2), A red loses to B (t3).
  PairwiseCounts ct(4);
  ct.add(0, 1, 1.0);
  ct.add(1, 0, 0.0);
  ct.add(0, 1, 0.0);
  BtFit cfit = fit_bradley_terry(ct);
  EXPECT_NEAR(r.rankings[0].contested_bt->value, cfit.scores[0], 1e-12);
  EXPECT_NEAR(cfit.scores[0], 0.5 * std::log(2.0), 1e-5);  // A 2 of 3 against B: p ratio 2
  // Role Elo over all four turns, in order: red A won (t1), red B lost, red A lost, red B lost (auto-win).
  RoleElo roles = role_elo(4, {{0, 1, 1.0}, {1, 0, 0.0}, {0, 1, 0.0}, {1, 0, 0.0}});
  EXPECT_DOUBLE_EQ(*r.rankings[0].red_elo, roles.red[0]);
  EXPECT_DOUBLE_EQ(*r.rankings[0].blue_elo, roles.blue[0]);

  // Head to head, keyed by the lexicographically smaller id.
  ASSERT_EQ(r.head_to_head.size(), 3u);
  EXPECT_EQ(r.head_to_head[0].model_a, "A#mini");
  EXPECT_EQ(r.head_to_head[0].model_b, "B#mini");
  EXPECT_EQ(r.head_to_head[0].a_wins, 1);
  EXPECT_EQ(r.head_to_head[1].model_a, "A#mini");
  EXPECT_EQ(r.head_to_head[1].model_b, "C");
  EXPECT_EQ(r.head_to_head[1].a_wins, 1);  // m3: C vs A, b_wins
  EXPECT_EQ(r.head_to_head[2].model_a, "B#mini");
  EXPECT_EQ(r.head_to_head[2].draws, 1);
  EXPECT_EQ(r.head_to_head[2].b_wins, 1);

  std::map<std::string, double> u = rating_uncertainty(r);
  EXPECT_GT(u["A#mini"], 0.0);
  EXPECT_NE(rankings_table(r).find("A#mini"), std::string::npos);
}

TEST(Rankings, JsonRoundTripWithTheReferenceFieldNames) {
  std::vector<MatchRecord> ms =
      matches_from_json(json::array({match_with_turns(), match_json("m2", "B#mini", "C", "draw")}), "m.json");
  RankingOptions o;
  o.tournament_id = "duel-1";
  o.format = "round_robin";
  o.exported_at = "2026-05-10T00:00:00Z";
  o.repos = json::array({"cjson", "fixture-py"});
  o.targets_per_repo = 1;
  o.bootstrap_samples = 50;
  json j = rankings_to_json(compute_rankings(ms, o));
  for (const char* k : {"tournament_id", "format", "exported_at", "repos", "targets_per_repo", "rankings",
                        "head_to_head", "matches"}) {
    EXPECT_TRUE(j.contains(k)) << k;
  }
  const json& row = j["rankings"][0];
  for (const char* k : {"rank", "model", "harness", "effort", "provider", "points", "matches_played", "bradley_terry",
                        "elo", "trueskill", "contested_bt", "bootstrap_median_rank", "rank_interval",
                        "rank_histogram"}) {
    EXPECT_TRUE(row.contains(k)) << k;
  }
  EXPECT_TRUE(row["bradley_terry"].contains("score"));
  EXPECT_TRUE(row["bradley_terry"].contains("rank"));
  EXPECT_EQ(row["bradley_terry"]["ci"].size(), 2u);
  EXPECT_TRUE(row["elo"].contains("rating"));
  for (const char* k : {"mu", "sigma", "score", "rank"}) EXPECT_TRUE(row["trueskill"].contains(k)) << k;

  // Through text and back: identical JSON.
  std::string dir = spade::evaldual::testing::fresh_dir("rankings");
  spade::write_file_atomic(dir + "/rankings.json", j.dump(2));
  json read = json::parse(spade::read_file(dir + "/rankings.json"));
  Rankings back = rankings_from_json(read, "rankings.json");
  EXPECT_EQ(rankings_to_json(back), j);
  // Its matches can be re-rated: same BT scores.
  Rankings again = compute_rankings(load_matches(dir + "/rankings.json"), o);
  EXPECT_EQ(rankings_to_json(again), j);
  EXPECT_THROW(rankings_from_json(json{{"format", "x"}}, "r.json"), spade::Error);
}

TEST(Rankings, NoBootstrapNoTurns) {
  std::vector<MatchRecord> ms = matches_from_json(json::array({match_json("m1", "A", "B", "a_wins")}), "m.json");
  RankingOptions o;
  o.bootstrap_samples = 0;
  o.exported_at = "x";
  Rankings r = compute_rankings(ms, o);
  json j = rankings_to_json(r);
  EXPECT_TRUE(j["rankings"][0]["bradley_terry"]["ci"].is_null());
  EXPECT_TRUE(j["rankings"][0]["contested_bt"].is_null());
  EXPECT_TRUE(j["rankings"][0]["rank_interval"].is_null());
  // One win from the prior: the `trueskill` package docs' rate_1vs1 example (29.396 / 7.171).
  EXPECT_EQ(j["rankings"][0]["participant"], "A");
  EXPECT_NEAR(j["rankings"][0]["trueskill"]["mu"].get<double>(), 29.396, 1e-3);
  EXPECT_NEAR(j["rankings"][0]["trueskill"]["sigma"].get<double>(), 7.171, 1e-3);
  EXPECT_EQ(j["rankings"][0]["trueskill"]["rank"], 1);
  EXPECT_NEAR(j["rankings"][1]["trueskill"]["mu"].get<double>(), 20.604, 1e-3);
  EXPECT_EQ(rankings_to_json(rankings_from_json(j, "r")), j);
  Rankings empty = compute_rankings({}, o);
  EXPECT_TRUE(empty.rankings.empty());
}

// ---------------------------------------------------------------- issue 17: never a meaningless number

namespace {

// Three players, every match a draw (what a round robin on an empty bank produces).
std::vector<MatchRecord> all_draws() {
  json doc = json::array();
  int k = 0;
  for (auto [a, b] : {std::make_pair("x", "y"), std::make_pair("y", "z"), std::make_pair("x", "z")})
    for (int rep = 0; rep < 2; ++rep) doc.push_back(match_json("d" + std::to_string(k++), a, b, "draw"));
  return matches_from_json(doc, "draws.json");
}

std::string rankings_error(const json& j) {
  return spade::fixtures::error_of([&] { rankings_from_json(j, "r.json"); });
}

}  // namespace

TEST(Rankings, IdenticalPlayersShareRankOne) {
  RankingOptions o;
  o.exported_at = "x";
  o.bootstrap_samples = 100;
  Rankings r = compute_rankings(all_draws(), o);
  ASSERT_EQ(r.rankings.size(), 3u);
  for (const RankingEntry& e : r.rankings) {
    EXPECT_EQ(e.rank, 1) << e.participant.id();  // was 1, 2, 3 by name
    EXPECT_EQ(e.elo.rank, 1);
    // (TrueSkill is not tied: its updates depend on the order of the matches, so the three differ.)
    EXPECT_EQ(e.bradley_terry.status, BtStatus::identified);
    EXPECT_EQ(e.rank_interval, std::make_pair(1, 1));
    EXPECT_EQ(e.bradley_terry.ci, std::make_pair(0.0, 0.0));  // every resample is all draws
  }
  // Listed by rank, then id; the table and the notes say what the shared rank and the flat interval mean.
  EXPECT_EQ(r.rankings[0].participant.id(), "x");
  std::string table = rankings_table(r);
  EXPECT_NE(table.find("all draws equal"), std::string::npos) << table;
  EXPECT_NE(table.find("shared rank: equal ratings share a rank"), std::string::npos) << table;
  json j = rankings_to_json(r);
  EXPECT_EQ(j["rankings"][2]["rank"], 1);
  EXPECT_EQ(j["rankings"][2]["bradley_terry"]["status"], "identified");
}

TEST(Rankings, SeparableRatingsAreMarkedInJsonAndTable) {
  // "s" beat both others in every match; "p" and "q" split theirs: s has no finite MLE (never lost).
  json doc = json::array({match_json("m1", "s", "p", "a_wins"), match_json("m2", "q", "s", "b_wins"),
                          match_json("m3", "p", "q", "a_wins"), match_json("m4", "q", "p", "a_wins"),
                          match_json("m5", "s", "q", "a_wins")});
  RankingOptions o;
  o.exported_at = "x";
  o.bootstrap_samples = 200;
  Rankings r = compute_rankings(matches_from_json(doc, "m.json"), o);
  const RankingEntry& s = r.rankings[0];
  EXPECT_EQ(s.participant.id(), "s");
  EXPECT_EQ(s.bradley_terry.status, BtStatus::above);
  EXPECT_EQ(s.bradley_terry.unidentified_draws, 200);
  EXPECT_FALSE(s.bradley_terry.ci_valid(200));
  EXPECT_EQ(bt_value_mark(s.bradley_terry), "not identified (+inf)");
  EXPECT_EQ(bt_interval_mark(s.bradley_terry, 200), "interval not identified in 200 of 200 draws");
  // p and q: 1-1 against each other, identified at 0 (by hand: equal wins, centred).
  for (size_t k = 1; k < 3; ++k) {
    EXPECT_EQ(r.rankings[k].bradley_terry.status, BtStatus::identified);
    EXPECT_NEAR(r.rankings[k].bradley_terry.value, 0.0, 1e-9);
    EXPECT_EQ(r.rankings[k].rank, 2);
  }
  json j = rankings_to_json(r);
  const json& bt = j["rankings"][0]["bradley_terry"];
  EXPECT_EQ(bt["status"], "above");
  EXPECT_EQ(bt["unidentified_draws"], 200);
  EXPECT_EQ(bt["ci_identified"], false);
  EXPECT_EQ(rankings_to_json(rankings_from_json(j, "r.json")), j);
  std::string table = rankings_table(r);
  EXPECT_NE(table.find("not identified (+inf); interval not identified in 200 of 200 draws"), std::string::npos) << table;
  EXPECT_NE(table.find("never lost to the main group"), std::string::npos) << table;
  EXPECT_NE(table.find("not a confidence interval"), std::string::npos) << table;
}

TEST(Rankings, NegativeBootstrapIsRefused) {
  RankingOptions o;
  o.bootstrap_samples = -5;  // was silently treated as 0
  std::string e = spade::fixtures::error_of([&] { compute_rankings(all_draws(), o); });
  EXPECT_NE(e.find("bootstrap samples: -5 is negative"), std::string::npos) << e;
}

TEST(Rankings, WrongFileKindAndMalformedFieldsAreNamed) {
  RankingOptions o;
  o.exported_at = "x";
  o.bootstrap_samples = 10;
  json good = rankings_to_json(compute_rankings(all_draws(), o));
  // A match list given as rankings: says so and names the command that turns it into rankings.
  std::string e = rankings_error(matches_to_json(all_draws()));
  EXPECT_NE(e.find("r.json: this is a match list"), std::string::npos) << e;
  EXPECT_NE(e.find("spade duel rate --matches r.json"), std::string::npos) << e;
  e = rankings_error(json{{"matches", json::array()}});
  EXPECT_NE(e.find("this is a match list"), std::string::npos) << e;
  e = rankings_error(json{{"tournament_id", "t"}, {"format", "round_robin"}, {"participants", json::array()},
                          {"schedule", json::array()}});
  EXPECT_NE(e.find("tournament state file"), std::string::npos) << e;
  // A wrong field: the file, the path to the field, what was expected and what was there.
  json bad = good;
  bad["rankings"][1]["bradley_terry"]["score"] = "high";
  EXPECT_EQ(rankings_error(bad), "r.json: rankings[1].bradley_terry.score: expected a number, got a string \"high\"");
  bad = good;
  bad["rankings"][0].erase("points");
  EXPECT_EQ(rankings_error(bad), "r.json: rankings[0]: missing key 'points'");
  bad = good;
  bad["rankings"][0]["bradley_terry"]["ci"] = json::array({1});
  EXPECT_EQ(rankings_error(bad), "r.json: rankings[0].bradley_terry.ci: expected [low, high] or null, got an array of 1");
  bad = good;
  bad["bootstrap"]["samples"] = -3;
  EXPECT_EQ(rankings_error(bad), "r.json: bootstrap.samples: -3 is negative");
  bad = good;
  bad["rankings"][0]["bradley_terry"]["status"] = "great";
  EXPECT_NE(rankings_error(bad).find("r.json: rankings[0].bradley_terry.status: unknown Bradley-Terry status 'great'"),
            std::string::npos);
  bad = good;
  bad["head_to_head"][0]["a_wins"] = 1.5;
  EXPECT_EQ(rankings_error(bad), "r.json: head_to_head[0].a_wins: expected an integer, got a number 1.5");
  // No library exception text in any of them.
  for (const json& doc : {json(3), json::array({1}), json{{"rankings", 1}}, bad})
    EXPECT_EQ(rankings_error(doc).find("json.exception"), std::string::npos) << rankings_error(doc);
}
