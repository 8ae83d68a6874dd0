// Elo (evaldual/elo.h) and tournament schedules (evaldual/schedule.h), checked against numbers worked
// by hand (each derivation in a comment).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "common/error.h"
#include "duel_test_util.h"
#include "evaldual/elo.h"
#include "evaldual/schedule.h"

using namespace spade::evaldual;

// ---------------------------------------------------------------- Elo

TEST(Elo, ThreeMatchesByHand) {
  // A=0, B=1, C=2, all 1500, K 32.
  // 1. A beats B: E = 0.5, A 1516, B 1484.
  // 2. B draws C: E_B = 1/(1+10^(16/400)) = 0.4769904, delta = 32 (0.5 - E_B) = 0.7363068: B 1484.7363068, C 1499.2636932.
  // 3. C beats A: E_A = 1/(1+10^((1499.2636932-1516)/400)) = 0.5240669, delta = -16.7701398:
  //    A 1499.2298602, C 1516.0338330.
  std::vector<double> r = elo_ratings(3, {{0, 1, 1.0}, {1, 2, 0.5}, {0, 2, 0.0}});
  EXPECT_NEAR(r[0], 1499.2298601854, 1e-8);
  EXPECT_NEAR(r[1], 1484.7363067935, 1e-8);
  EXPECT_NEAR(r[2], 1516.0338330211, 1e-8);
  EXPECT_NEAR(r[0] + r[1] + r[2], 4500.0, 1e-9);  // zero-sum
  EXPECT_DOUBLE_EQ(elo_expected(1500, 1500), 0.5);
  EXPECT_NEAR(elo_expected(1900, 1500), 10.0 / 11.0, 1e-12);  // 400 points: odds 10:1
}

TEST(Elo, OrderMattersAndOptionsApply) {
  std::vector<double> ab = elo_ratings(2, {{0, 1, 1.0}, {0, 1, 0.0}});
  std::vector<double> ba = elo_ratings(2, {{0, 1, 0.0}, {0, 1, 1.0}});
  EXPECT_NEAR(ab[0], 1500 + 16 - 32 * elo_expected(1516, 1484), 1e-9);
  EXPECT_NEAR(ab[0], 2 * 1500 - ba[0], 1e-9);  // mirror image
  EloOptions o;
  o.k = 10;
  o.initial = 1000;
  EXPECT_DOUBLE_EQ(elo_ratings(2, {{0, 1, 1.0}}, o)[0], 1005.0);
  EXPECT_THROW(elo_ratings(2, {{0, 2, 1.0}}), spade::Error);
  EXPECT_THROW(elo_ratings(2, {{1, 1, 1.0}}), spade::Error);
}

TEST(Elo, PerRoleRatingsByHand) {
  // Turn 1: Red A (0) vs Blue B (1), Blue repairs: Red score 0 -> red[A] 1484, blue[B] 1516.
  // Turn 2: Red B vs Blue A, Red wins (latent bug ships): red[B] 1516, blue[A] 1484.
  // Turn 3: Red A (1484) vs Blue B (1516), Blue repairs: E_red = 1/(1+10^(32/400)) = 0.4540781,
  //         delta = -32 * 0.4540781 = -14.5304985: red[A] 1469.4695015, blue[B] 1530.5304985.
  RoleElo r = role_elo(2, {{0, 1, 0.0}, {1, 0, 1.0}, {0, 1, 0.0}});
  EXPECT_NEAR(r.red[0], 1469.4695015, 1e-6);
  EXPECT_NEAR(r.blue[1], 1530.5304985, 1e-6);
  EXPECT_DOUBLE_EQ(r.red[1], 1516.0);
  EXPECT_DOUBLE_EQ(r.blue[0], 1484.0);
}

// ---------------------------------------------------------------- round robin

namespace {
using Pairs = std::vector<std::pair<std::string, std::string>>;

void expect_every_pair_once(const std::vector<std::string>& ids) {
  std::vector<Round> rounds = round_robin_schedule(ids);
  size_t n = ids.size();
  EXPECT_EQ(rounds.size(), n % 2 == 0 ? n - 1 : n);
  std::set<std::pair<std::string, std::string>> seen;
  std::set<std::string> byes;
  for (const Round& r : rounds) {
    std::set<std::string> in_round;
    for (const auto& [a, b] : r.pairs) {
      EXPECT_TRUE(in_round.insert(a).second) << a << " plays twice in a round";
      EXPECT_TRUE(in_round.insert(b).second) << b << " plays twice in a round";
      EXPECT_TRUE(seen.insert(a < b ? std::make_pair(a, b) : std::make_pair(b, a)).second) << a << " vs " << b;
    }
    EXPECT_EQ(r.bye.empty(), n % 2 == 0);
    if (!r.bye.empty()) {
      EXPECT_TRUE(byes.insert(r.bye).second) << r.bye << " sits out twice";
      EXPECT_EQ(in_round.count(r.bye), 0u);
    }
  }
  EXPECT_EQ(seen.size(), n * (n - 1) / 2);
}
}  // namespace

TEST(RoundRobin, CircleMethodFourByHand) {
  // Seats [A B C D]; round r pairs seat i with seat 3-i; then the last seat moves to seat 1.
  // r1 [A B C D]: A-D B-C; r2 [A D B C]: A-C D-B; r3 [A C D B]: A-B C-D.
  std::vector<Round> r = round_robin_schedule({"A", "B", "C", "D"});
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[0].pairs, (Pairs{{"A", "D"}, {"B", "C"}}));
  EXPECT_EQ(r[1].pairs, (Pairs{{"A", "C"}, {"D", "B"}}));
  EXPECT_EQ(r[2].pairs, (Pairs{{"A", "B"}, {"C", "D"}}));
  for (const Round& x : r) EXPECT_TRUE(x.bye.empty());
}

TEST(RoundRobin, CircleMethodFiveWithByeByHand) {
  // Seats [A B C D E _] (_ = bye): r1 A-_ B-E C-D; r2 [A _ B C D E]: A-E _-D B-C; r3 [A E _ B C D]:
  // A-D E-C _-B; r4 [A D E _ B C]: A-C D-B E-_; r5 [A C D E _ B]: A-B C-_ D-E.
  std::vector<Round> r = round_robin_schedule({"A", "B", "C", "D", "E"});
  ASSERT_EQ(r.size(), 5u);
  EXPECT_EQ(r[0].pairs, (Pairs{{"B", "E"}, {"C", "D"}}));
  EXPECT_EQ(r[0].bye, "A");
  EXPECT_EQ(r[1].pairs, (Pairs{{"A", "E"}, {"B", "C"}}));
  EXPECT_EQ(r[1].bye, "D");
  EXPECT_EQ(r[2].pairs, (Pairs{{"A", "D"}, {"E", "C"}}));
  EXPECT_EQ(r[2].bye, "B");
  EXPECT_EQ(r[3].pairs, (Pairs{{"A", "C"}, {"D", "B"}}));
  EXPECT_EQ(r[3].bye, "E");
  EXPECT_EQ(r[4].pairs, (Pairs{{"A", "B"}, {"D", "E"}}));
  EXPECT_EQ(r[4].bye, "C");
}

TEST(RoundRobin, EveryPairExactlyOnceForTwoToTwelve) {
  std::vector<std::string> ids;
  for (int n = 1; n <= 12; ++n) {
    ids.push_back("p" + std::to_string(n));
    if (n >= 2) expect_every_pair_once(ids);
  }
  EXPECT_THROW(round_robin_schedule({"A"}), spade::Error);
  EXPECT_THROW(round_robin_schedule({"A", "B", "A"}), spade::Error);
}

// ---------------------------------------------------------------- active sampling

TEST(ActiveSampling, BudgetByHand) {
  // ceil(log2 M) + 1, clamped to [3, M]: M=10 -> 4+1 = 5 (paper §3.4, the Gemini entrant).
  EXPECT_EQ(active_sampling_budget(0), 0);
  EXPECT_EQ(active_sampling_budget(1), 1);   // 0+1 -> floor 3 -> cap 1
  EXPECT_EQ(active_sampling_budget(2), 2);   // 1+1 = 2 -> floor 3 -> cap 2
  EXPECT_EQ(active_sampling_budget(3), 3);   // 2+1
  EXPECT_EQ(active_sampling_budget(4), 3);   // 2+1
  EXPECT_EQ(active_sampling_budget(5), 4);   // 3+1
  EXPECT_EQ(active_sampling_budget(8), 4);   // 3+1
  EXPECT_EQ(active_sampling_budget(9), 5);   // 4+1
  EXPECT_EQ(active_sampling_budget(10), 5);  // 4+1
  EXPECT_EQ(active_sampling_budget(16), 5);  // 4+1
  EXPECT_EQ(active_sampling_budget(17), 6);  // 5+1
  EXPECT_EQ(active_sampling_budget(1024), 11);
}

TEST(ActiveSampling, GainByHand) {
  // 1 win, 1 draw, 1 loss: wins 1.5 of 3, p = 2.5/5 = 0.5, v = 0.25:
  // sqrt(0.25/3) - sqrt(0.25/4) = 0.2886751 - 0.25 = 0.0386751.
  EXPECT_DOUBLE_EQ(laplace_win_rate(1.5, 3), 0.5);
  EXPECT_NEAR(active_sampling_gain(0.5, 3), 0.038675134595, 1e-12);
  // 3 wins of 3: p = 4/5 = 0.8, v = 0.16: sqrt(0.16/3) - sqrt(0.16/4) = 0.2309401 - 0.2 = 0.0309401.
  EXPECT_DOUBLE_EQ(laplace_win_rate(3, 3), 0.8);
  EXPECT_NEAR(active_sampling_gain(0.8, 3), 0.030940107676, 1e-12);
  EXPECT_DOUBLE_EQ(active_sampling_gain(0.5, 0), kUnplayedPairGain);
  EXPECT_DOUBLE_EQ(laplace_win_rate(0, 0), 0.5);
}

namespace {
MatchRecord played(const std::string& id, const std::string& a, const std::string& b, Outcome o) {
  MatchRecord m;
  m.match_id = id;
  m.model_a = a;
  m.model_b = b;
  m.outcome = o;
  return m;
}
}  // namespace

TEST(ActiveSampling, CandidatesOrderedByGainThenUncertaintyThenId) {
  std::vector<std::string> inc = {"i1", "i2", "i3", "i4"};
  std::vector<MatchRecord> ms = {played("m1", "new", "i2", Outcome::kAWins), played("m2", "i1", "i3", Outcome::kDraw)};
  std::map<std::string, double> u = {{"i1", 0.5}, {"i2", 2.0}, {"i3", 0.9}, {"i4", 0.5}};
  std::vector<SamplingCandidate> c = active_sampling_candidates("new", inc, ms, u);
  ASSERT_EQ(c.size(), 3u);  // i2 already played
  EXPECT_EQ(c[0].incumbent, "i3");  // all unplayed (huge gain): uncertainty 0.9 first
  EXPECT_EQ(c[1].incumbent, "i1");  // 0.5 tie: id order
  EXPECT_EQ(c[2].incumbent, "i4");
  EXPECT_DOUBLE_EQ(c[0].gain, kUnplayedPairGain);
  // With rematches allowed, i2 (1 game won: p = 2/3, gain sqrt(2/9) - sqrt(2/18)) comes last.
  std::vector<SamplingCandidate> all = active_sampling_candidates("new", inc, ms, u, {}, true);
  ASSERT_EQ(all.size(), 4u);
  EXPECT_EQ(all[3].incumbent, "i2");
  EXPECT_NEAR(all[3].p, 2.0 / 3.0, 1e-12);
  EXPECT_NEAR(all[3].gain, std::sqrt(2.0 / 9.0) - std::sqrt(1.0 / 9.0), 1e-12);
  EXPECT_THROW(active_sampling_candidates("i1", inc, ms, u), spade::Error);
}

TEST(ActiveSampling, LateEntrantStateIsResumable) {
  std::string dir = spade::evaldual::testing::fresh_dir("late_entrant");
  std::string path = dir + "/state.json";
  TournamentState s = make_late_entrant_state("t1", "new", {"i1", "i2", "i3", "i4"});
  EXPECT_EQ(s.budget, 3);  // M = 4: ceil(log2 4) + 1 = 3
  std::map<std::string, double> u = {{"i1", 0.1}, {"i2", 0.4}, {"i3", 0.3}, {"i4", 0.2}};
  std::vector<MatchRecord> ms;

  std::optional<ScheduledMatch> m = next_late_entrant_match(s, ms, u);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->b, "i2");
  EXPECT_EQ(m->match_id, "t1-as1");
  save_tournament_state(path, s);

  // "Killed" here: a reload returns the same pending match rather than choosing again.
  TournamentState r = load_tournament_state(path);
  std::optional<ScheduledMatch> again = next_late_entrant_match(r, ms, u);
  ASSERT_TRUE(again);
  EXPECT_EQ(again->match_id, "t1-as1");
  EXPECT_EQ(r.schedule.size(), 1u);

  ms.push_back(played("t1-as1", "new", "i2", Outcome::kBWins));
  mark_done(r, "t1-as1");
  EXPECT_EQ(next_late_entrant_match(r, ms, u)->b, "i3");
  mark_done(r, "t1-as2");
  EXPECT_EQ(next_late_entrant_match(r, ms, u)->b, "i4");
  mark_done(r, "t1-as3");
  EXPECT_FALSE(next_late_entrant_match(r, ms, u));  // budget spent
  EXPECT_EQ(next_pending(r), nullptr);
  EXPECT_THROW(mark_done(r, "nope"), spade::Error);
  save_tournament_state(path, r);
  EXPECT_EQ(tournament_state_to_json(load_tournament_state(path)), tournament_state_to_json(r));
}

TEST(RoundRobin, StateResumesAtTheFirstPendingMatch) {
  std::string dir = spade::evaldual::testing::fresh_dir("rr_state");
  TournamentState s = make_round_robin_state("rr", {"A", "B", "C", "D", "E"});
  EXPECT_EQ(s.schedule.size(), 10u);
  EXPECT_EQ(s.schedule[0].match_id, "rr-r1-m1");
  EXPECT_EQ(s.schedule[0].a, "B");  // round 1: B-E, C-D (A sits out)
  mark_done(s, "rr-r1-m1");
  save_tournament_state(dir + "/s.json", s);
  TournamentState r = load_tournament_state(dir + "/s.json");
  ASSERT_NE(next_pending(r), nullptr);
  EXPECT_EQ(next_pending(r)->match_id, "rr-r1-m2");
  EXPECT_THROW(next_late_entrant_match(r, {}, {}), spade::Error);
  spade::write_file_atomic(dir + "/bad.json", "{\"format\": \"swiss\"}");
  EXPECT_THROW(load_tournament_state(dir + "/bad.json"), spade::Error);
}
