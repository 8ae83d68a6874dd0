// Bradley-Terry and bootstrap (evaldual/bradley_terry.h, evaldual/bootstrap.h) against values computed
// independently by tests/evaldual/reference/bt_reference.py: Newton's method on the BT log-likelihood
// (not MM), per connected component, centred; its bootstrap replays std::mt19937_64 in pure Python and
// fits every draw by Newton. Re-run with `python3 tests/evaldual/reference/bt_reference.py`; the data
// below is the script's, in the same order.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "common/error.h"
#include "evaldual/bootstrap.h"
#include "evaldual/bradley_terry.h"

using namespace spade::evaldual;

namespace {

constexpr double W = 1.0, D = 0.5, L = 0.0;

using Triple = std::tuple<int, int, double>;

PairwiseCounts counts_of(int n, const std::vector<Triple>& data) {
  PairwiseCounts c(n);
  for (const auto& [a, b, s] : data) c.add(a, b, s);
  return c;
}

std::vector<Comparison> comps_of(const std::vector<Triple>& data) {
  std::vector<Comparison> out;
  for (const auto& [a, b, s] : data) out.push_back({a, b, s});
  return out;
}

void expect_all_near(const std::vector<double>& got, const std::vector<double>& want, double tol) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tol) << "index " << i;
}

void expect_finite(const std::vector<double>& v) {
  for (size_t i = 0; i < v.size(); ++i) EXPECT_TRUE(std::isfinite(v[i])) << "index " << i << " = " << v[i];
}

double mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return s / v.size();
}

// bt_reference.py: CONNECTED, DISCONNECTED, ZERO_WINS_*, boot_data().
const std::vector<Triple> kConnected = {{0, 1, W}, {0, 1, W}, {1, 0, W}, {0, 2, W}, {2, 0, D}, {0, 3, W}, {3, 0, W},
                                        {1, 2, W}, {1, 2, D}, {2, 1, W}, {1, 3, W}, {3, 1, W}, {2, 3, W}, {2, 3, W},
                                        {3, 2, W}};
const std::vector<Triple> kDisconnected = {{0, 1, W}, {1, 0, W}, {0, 1, W}, {1, 2, W}, {2, 1, W}, {1, 2, W},
                                           {0, 2, W}, {2, 0, W}, {3, 4, W}, {4, 3, W}, {3, 4, W}, {3, 4, D}};
const std::vector<Triple> kZeroWinsOthers = {{0, 1, W}, {1, 0, W}, {0, 1, W}, {1, 2, W},
                                             {2, 1, W}, {0, 2, W}, {2, 0, W}, {2, 1, D}};
const std::vector<Triple> kZeroWinsZ = {{0, 3, W}, {3, 1, L}, {2, 3, W}, {3, 0, L}};
const std::vector<Triple> kBootData = {
    {0, 1, 1.0}, {1, 0, 0.0}, {0, 1, 0.0}, {1, 0, 0.0}, {0, 1, 0.5}, {1, 0, 0.0}, {0, 1, 0.0}, {0, 2, 1.0},
    {2, 0, 1.0}, {0, 2, 1.0}, {2, 0, 0.0}, {0, 2, 0.5}, {2, 0, 0.0}, {0, 2, 1.0}, {0, 3, 1.0}, {3, 0, 0.0},
    {0, 3, 1.0}, {3, 0, 1.0}, {0, 3, 1.0}, {3, 0, 0.5}, {0, 3, 1.0}, {1, 2, 1.0}, {2, 1, 1.0}, {1, 2, 0.5},
    {2, 1, 0.0}, {1, 2, 0.0}, {2, 1, 0.0}, {1, 3, 1.0}, {3, 1, 0.0}, {1, 3, 0.0}, {3, 1, 0.0}, {1, 3, 0.5},
    {3, 1, 0.0}, {1, 3, 0.0}, {2, 3, 0.0}, {3, 2, 0.0}, {2, 3, 1.0}, {3, 2, 0.5}, {2, 3, 1.0}, {3, 2, 1.0}};

}  // namespace

// MM stops when no log-strength moves by more than 1e-6 in an iteration; its distance to the optimum is
// then a few times that, so 1e-5 is the comparison tolerance.
constexpr double kTol = 1e-5;

TEST(BradleyTerry, ConnectedWithDrawsMatchesNewton) {
  BtFit fit = fit_bradley_terry(counts_of(4, kConnected));
  EXPECT_TRUE(fit.converged);
  EXPECT_EQ(fit.components, 1);
  // bt_reference.py "connected".
  expect_all_near(fit.scores, {0.4393610714, -0.1655846834, -0.0413861008, -0.2323902872}, kTol);
  EXPECT_NEAR(mean(fit.scores), 0.0, 1e-12);
  EXPECT_EQ(rank_by_score(fit.scores), (std::vector<int>{1, 3, 2, 4}));
  for (BtStatus st : fit.status) EXPECT_EQ(st, BtStatus::identified);
}

TEST(BradleyTerry, DisconnectedGraphFitsAndCentresEachComponent) {
  BtFit fit = fit_bradley_terry(counts_of(5, kDisconnected));
  EXPECT_TRUE(fit.converged);
  EXPECT_EQ(fit.components, 2);
  EXPECT_EQ(fit.component, (std::vector<int>{0, 0, 0, 1, 1}));
  // The larger component is the main one; the other shares no scale with it.
  EXPECT_EQ(fit.status, (std::vector<BtStatus>{BtStatus::identified, BtStatus::identified, BtStatus::identified,
                                               BtStatus::apart, BtStatus::apart}));
  // bt_reference.py "disconnected": Newton per component, each centred.
  expect_all_near(fit.scores, {0.2911343575, 0.0, -0.2911343575, 0.2554128119, -0.2554128119}, kTol);
  expect_finite(fit.scores);
}

TEST(BradleyTerry, AllDrawsGiveZeroWithoutNaN) {
  std::vector<Triple> draws = {{0, 1, D}, {1, 2, D}, {2, 0, D}, {0, 1, D}, {3, 0, D}};
  BtFit fit = fit_bradley_terry(counts_of(4, draws));
  EXPECT_TRUE(fit.converged);
  EXPECT_EQ(fit.iterations, 1);
  for (double s : fit.scores) EXPECT_EQ(s, 0.0);  // W_i equals the MM denominator exactly
  // All tied: all share rank 1.
  EXPECT_EQ(rank_by_score(fit.scores), (std::vector<int>{1, 1, 1, 1}));
}

TEST(BradleyTerry, NoGamesAndIsolatedParticipants) {
  BtFit empty = fit_bradley_terry(PairwiseCounts(3));
  EXPECT_TRUE(empty.converged);
  EXPECT_EQ(empty.components, 3);
  EXPECT_EQ(empty.scores, (std::vector<double>{0, 0, 0}));
  BtFit none = fit_bradley_terry(PairwiseCounts(0));
  EXPECT_TRUE(none.scores.empty());
  // An isolated participant beside a played pair: its own component, score 0.
  PairwiseCounts c(3);
  c.add(0, 1, W);
  c.add(1, 0, W);
  c.add(0, 1, W);
  BtFit fit = fit_bradley_terry(c);
  EXPECT_EQ(fit.components, 2);
  EXPECT_EQ(fit.scores[2], 0.0);
  EXPECT_NEAR(fit.scores[0], 0.5 * std::log(2.0), kTol);  // 2 of 3: p0/p1 = 2, centred
}

TEST(BradleyTerry, ZeroWinsStaysFiniteAndLast) {
  std::vector<Triple> data = kZeroWinsOthers;
  data.insert(data.end(), kZeroWinsZ.begin(), kZeroWinsZ.end());
  BtFit fit = fit_bradley_terry(counts_of(4, data));
  expect_finite(fit.scores);
  EXPECT_FALSE(fit.converged);  // the MLE of Z is -infinity: MM runs to the cap
  EXPECT_EQ(fit.iterations, 1000);
  std::vector<int> rank = rank_by_score(fit.scores);
  EXPECT_EQ(rank[3], 4);
  EXPECT_LT(fit.scores[3], fit.scores[1] - 3.0);
  EXPECT_EQ(fit.status[3], BtStatus::below);
  // The others are the limit MLE exactly (bt_reference.py "zero_wins_others_limit": Z's matches
  // dropped), centred over themselves.
  expect_all_near({fit.scores[0], fit.scores[1], fit.scores[2]}, {0.2580256302, -0.2254893021, -0.0325363281}, kTol);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(fit.status[i], BtStatus::identified);
}

TEST(BradleyTerry, ZeroLossesStaysFiniteAndFirst) {
  // A beats everyone; B and C split.
  std::vector<Triple> data = {{0, 1, W}, {0, 2, W}, {1, 2, W}, {2, 1, W}, {0, 1, W}};
  BtFit fit = fit_bradley_terry(counts_of(3, data));
  expect_finite(fit.scores);
  EXPECT_EQ(rank_by_score(fit.scores)[0], 1);
  EXPECT_EQ(fit.status, (std::vector<BtStatus>{BtStatus::above, BtStatus::identified, BtStatus::identified}));
}

TEST(BradleyTerry, TiesShareACompetitionRank) {
  // Standard competition ranking, by hand: equal values share the better rank, the next one skips.
  EXPECT_EQ(rank_by_score({0.5, 0.5, 1.0}), (std::vector<int>{2, 2, 1}));
  EXPECT_EQ(rank_by_score({3.0, 1.0, 1.0, 0.0}), (std::vector<int>{1, 2, 2, 4}));
  EXPECT_EQ(rank_by_score({0.0, 0.0, 0.0}), (std::vector<int>{1, 1, 1}));
  EXPECT_EQ(rank_by_score({1.0, 1.0 + 1e-12, 0.9}), (std::vector<int>{1, 1, 3}));  // within kRankTieTolerance
  EXPECT_EQ(rank_by_score({1.0, 1.0 + 1e-6}), (std::vector<int>{2, 1}));
  EXPECT_TRUE(rank_by_score({}).empty());
}

TEST(BradleyTerry, IdenticalPlayersAreTiedAndIdentified) {
  // Three players who drew every match (what an empty task bank produces): the MLE is 0 for all, so
  // all three are rank 1 (the old code ranked them 1, 2, 3 by name).
  std::vector<Triple> draws = {{0, 1, D}, {1, 2, D}, {2, 0, D}, {1, 0, D}};
  BtFit fit = fit_bradley_terry(counts_of(3, draws));
  EXPECT_EQ(rank_by_score(fit.scores), (std::vector<int>{1, 1, 1}));
  for (BtStatus st : fit.status) EXPECT_EQ(st, BtStatus::identified);
  // A symmetric cycle (A beat B, B beat C, C beat A) has the same MLE.
  BtFit cycle = fit_bradley_terry(counts_of(3, {{0, 1, W}, {1, 2, W}, {2, 0, W}}));
  EXPECT_EQ(rank_by_score(cycle.scores), (std::vector<int>{1, 1, 1}));
  EXPECT_TRUE(cycle.converged);
}

TEST(BradleyTerry, SeparableDataIsMarkedAndTheMainGroupIsItsLimitMle) {
  // bt_reference.py "separable": statuses by pairwise reachability (not Kosaraju) and the reference
  // group's limit scores by Newton on the games inside it.
  BtFit fit = fit_bradley_terry(counts_of(8, {{0, 1, W}, {1, 0, W}, {1, 2, W}, {2, 1, W}, {0, 2, W}, {2, 0, D}, {0, 1, W},
                                              {3, 0, W}, {3, 1, W}, {2, 4, W}, {3, 4, W}, {6, 7, W}, {7, 6, W}}));
  const std::vector<BtStatus> want = {BtStatus::identified, BtStatus::identified, BtStatus::identified,
                                      BtStatus::above,      BtStatus::below,      BtStatus::no_games,
                                      BtStatus::apart,      BtStatus::apart};
  EXPECT_EQ(fit.status, want);
  EXPECT_FALSE(fit.converged);  // the reference's fit of the separable component runs to the cap
  EXPECT_EQ(fit.iterations, 1000);
  expect_all_near({fit.scores[0], fit.scores[1], fit.scores[2]}, {0.5743293581, -0.2204780666, -0.3538512916}, kTol);
  // The separated ones keep the cap's values, on the right side of the main group.
  EXPECT_GT(fit.scores[3], fit.scores[0]);
  EXPECT_LT(fit.scores[4], fit.scores[2]);
  EXPECT_EQ(fit.scores[5], 0.0);
  expect_finite(fit.scores);
  // The values of the separated ones depend on the cap; the main group's do not.
  BtOptions longer;
  longer.max_iterations = 3000;
  BtFit fit3 = fit_bradley_terry(counts_of(8, {{0, 1, W}, {1, 0, W}, {1, 2, W}, {2, 1, W}, {0, 2, W}, {2, 0, D}, {0, 1, W},
                                               {3, 0, W}, {3, 1, W}, {2, 4, W}, {3, 4, W}, {6, 7, W}, {7, 6, W}}),
                                  longer);
  EXPECT_NEAR(fit3.scores[0], fit.scores[0], 1e-5);
  EXPECT_GT(fit3.scores[3], fit.scores[3] + 1e-3);
}

TEST(BradleyTerry, ChainWithoutAGroupMarksSourcesAndSinks) {
  // By hand: A beat B, B beat C, A beat C. No two participants beat each other both ways, so no group
  // of two exists: A never lost (above), C never won (below), B both (between); no finite MLE at all.
  BtFit fit = fit_bradley_terry(counts_of(3, {{0, 1, W}, {1, 2, W}, {0, 2, W}}));
  EXPECT_EQ(fit.status, (std::vector<BtStatus>{BtStatus::above, BtStatus::between, BtStatus::below}));
  EXPECT_EQ(rank_by_score(fit.scores), (std::vector<int>{1, 2, 3}));
  // One game: the winner is above, the loser below.
  BtFit one = fit_bradley_terry(counts_of(2, {{1, 0, W}}));
  EXPECT_EQ(one.status, (std::vector<BtStatus>{BtStatus::below, BtStatus::above}));
}

TEST(BradleyTerry, StatusNamesRoundTrip) {
  for (BtStatus st : {BtStatus::identified, BtStatus::capped, BtStatus::above, BtStatus::below, BtStatus::between,
                      BtStatus::apart, BtStatus::no_games}) {
    EXPECT_EQ(parse_bt_status(bt_status_name(st), "x"), st);
    EXPECT_FALSE(bt_status_meaning(st).empty());
  }
  EXPECT_THROW(parse_bt_status("infinite", "r.json: rankings[0].bradley_terry.status"), spade::Error);
}

TEST(BradleyTerry, CappedWhenTheIdentifiedFitStopsEarly) {
  // A well-posed fit cut off after 2 iterations: identified data, but not at the MLE yet.
  BtOptions o;
  o.max_iterations = 2;
  BtFit fit = fit_bradley_terry(counts_of(4, kConnected), o);
  for (BtStatus st : fit.status) EXPECT_EQ(st, BtStatus::capped);
}

TEST(BradleyTerry, CountsRejectSelfPlayAndBadIndex) {
  PairwiseCounts c(2);
  EXPECT_THROW(c.add(0, 0, W), spade::Error);
  EXPECT_THROW(c.add(0, 2, W), spade::Error);
}

// ---------------------------------------------------------------- bootstrap

TEST(Bootstrap, Mt19937_64IsTheStandardStream) {
  std::mt19937_64 e;  // default seed 5489: the 10000th output is fixed by the C++ standard
  e.discard(9999);
  EXPECT_EQ(e(), 9981545732273789042ULL);
}

TEST(Bootstrap, PercentileIsNumpyLinear) {
  std::vector<double> v = {1, 2, 3, 4};
  EXPECT_DOUBLE_EQ(percentile(v, 0.5), 2.5);
  EXPECT_DOUBLE_EQ(percentile(v, 0.025), 1.075);  // numpy.percentile([1,2,3,4], 2.5)
  EXPECT_DOUBLE_EQ(percentile(v, 1.0), 4.0);
  EXPECT_THROW(percentile({}, 0.5), spade::Error);
}

TEST(Bootstrap, MatchesNewtonReplayOfTheSameDraws) {
  BootstrapOptions o;
  o.samples = 200;
  o.seed = 7;
  o.elo = false;
  BootstrapResult r = bootstrap_ratings({"A", "B", "C", "D"}, comps_of(kBootData), o);
  ASSERT_EQ(r.samples, 200);
  EXPECT_EQ(r.unconverged, 0);
  // bt_reference.py "boot A..D" (200 draws, seed 7).
  expect_all_near(r.score_low, {0.1488102227, -0.5326668219, -1.1624314408, -1.4435295789}, 1e-4);
  expect_all_near(r.score_high, {1.6296987841, 0.8222862069, 0.4596637786, 0.0016690863}, 1e-4);
  EXPECT_EQ(r.median_rank, (std::vector<double>{1.0, 2.0, 3.0, 4.0}));
  EXPECT_EQ(r.rank_low, (std::vector<int>{1, 1, 2, 2}));
  EXPECT_EQ(r.rank_high, (std::vector<int>{2, 4, 4, 4}));
  EXPECT_EQ(r.rank_histogram[0], (std::vector<int>{175, 23, 2, 0}));
  EXPECT_EQ(r.rank_histogram[1], (std::vector<int>{24, 126, 41, 9}));
  EXPECT_EQ(r.rank_histogram[2], (std::vector<int>{1, 39, 98, 62}));  // one draw ties C and D at 3
  EXPECT_EQ(r.rank_histogram[3], (std::vector<int>{0, 12, 60, 128}));
  // The point fit (bt_reference.py "boot_point") lies inside every interval.
  BtFit fit = fit_bradley_terry(counts_of(4, kBootData));
  expect_all_near(fit.scores, {0.7894884294, 0.0853489591, -0.3176470720, -0.5571903165}, kTol);
  for (int i = 0; i < 4; ++i) {
    EXPECT_LT(r.score_low[i], fit.scores[i]);
    EXPECT_GT(r.score_high[i], fit.scores[i]);
  }
}

TEST(Bootstrap, SameSeedSameResultAndEloIntervals) {
  BootstrapOptions o;
  o.samples = 100;
  o.seed = 3;
  BootstrapResult a = bootstrap_ratings({"A", "B", "C", "D"}, comps_of(kBootData), o);
  BootstrapResult b = bootstrap_ratings({"A", "B", "C", "D"}, comps_of(kBootData), o);
  EXPECT_EQ(a.score_low, b.score_low);
  EXPECT_EQ(a.rank_histogram, b.rank_histogram);
  ASSERT_EQ(a.elo_low.size(), 4u);
  for (int i = 0; i < 4; ++i) {
    EXPECT_LE(a.elo_low[i], a.elo_high[i]);
    int total = 0;
    for (int c : a.rank_histogram[i]) total += c;
    EXPECT_EQ(total, 100);
  }
  o.seed = 4;
  EXPECT_NE(bootstrap_ratings({"A", "B", "C", "D"}, comps_of(kBootData), o).score_low, a.score_low);
}

TEST(Bootstrap, IllPosedDrawsStayFinite) {
  // Few matches, a disconnected pair and all draws: many draws are ill posed; nothing is NaN.
  std::vector<Triple> data = {{0, 1, W}, {1, 2, D}, {3, 4, D}, {3, 4, D}};
  BootstrapOptions o;
  o.samples = 300;
  BootstrapResult r = bootstrap_ratings({"a", "b", "c", "d", "e"}, comps_of(data), o);
  expect_finite(r.score_low);
  expect_finite(r.score_high);
  expect_finite(r.median_rank);
  expect_finite(r.elo_low);
  BootstrapResult none = bootstrap_ratings({"a", "b"}, {}, o);
  EXPECT_EQ(none.median_rank, (std::vector<double>{1.0, 1.0}));  // all tied: all rank 1
  EXPECT_EQ(none.unidentified_draws, (std::vector<int>{300, 300}));  // no games in any draw
  o.samples = 0;
  EXPECT_EQ(bootstrap_ratings({"a", "b"}, comps_of(data), o).samples, 0);
}

TEST(Bootstrap, SeparableDrawsAreCountedAndTheirIntervalsMarked) {
  // kConnected plus E (4), who beat everyone in every match: E has no finite MLE in every resample
  // (every draw's fit hit the cap, which the old code still printed as a tight interval).
  std::vector<Triple> data = kConnected;
  for (int k = 0; k < 4; ++k) data.push_back({4, k, W});
  BootstrapOptions o;
  o.samples = 200;
  o.elo = false;
  BootstrapResult r = bootstrap_ratings({"A", "B", "C", "D", "E"}, comps_of(data), o);
  EXPECT_EQ(r.unidentified_draws[4], 200);  // never lost where it played; no games where it did not
  EXPECT_FALSE(ci_identified(r.unidentified_draws[4], r.samples));
  // First in every draw in which it played (a draw leaves all 4 of its 19 matches out with probability
  // (15/19)^19 ~ 1.1%, then it has no games and ranks by 0), and each such draw's fit hit the cap.
  EXPECT_GE(r.rank_histogram[4][0], 190);
  EXPECT_GE(r.unconverged, r.rank_histogram[4][0]);
  // The others are mostly identified (a resample may leave one of them without a win or a loss).
  for (int i = 0; i < 4; ++i) EXPECT_LT(r.unidentified_draws[i], 200) << i;
  // The rule: at most 2.5% of the draws unidentified.
  EXPECT_TRUE(ci_identified(25, 1000));
  EXPECT_FALSE(ci_identified(26, 1000));
  EXPECT_TRUE(ci_identified(0, 0));
}

TEST(Bootstrap, BoundedIndexIsInRange) {
  std::mt19937_64 e(1);
  for (uint64_t n : {1ULL, 2ULL, 3ULL, 50ULL, 1000003ULL}) {
    for (int k = 0; k < 200; ++k) EXPECT_LT(bounded_index(e, n), n);
  }
  EXPECT_THROW(bounded_index(e, 0), spade::Error);
}
