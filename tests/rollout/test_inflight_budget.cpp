// SamplingParams::max_tokens_in_flight (issue 4: "a request queue with a max-tokens-in-flight budget").
// A row reserves its history + its cap of new tokens at admission; the head of the queue waits until the
// reservations of the running rows leave room. Every expected number below is derived by hand from that
// rule (the comments show the arithmetic); the sampled tokens and logprobs must not depend on the budget.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <string>
#include <vector>

#include "common/error.h"
#include "rollout/sampler.h"
#include "tests/testing/random_model.h"

using namespace spade;
using policy::Transformer;
using rollout::GenerationResult;
using rollout::GenerationSession;
using rollout::SamplerStats;
using rollout::SamplingParams;

namespace {

// Full distribution (temperature 1, no filter) and no stop token: every row runs to its cap, so the
// KV lengths below are exact, and any numeric drift between batch layouts would show up as another draw.
SamplingParams sampling(int max_new) {
  SamplingParams p;
  p.temperature = 1.0;
  p.top_k = 0;
  p.top_p = 1.0;
  p.max_new_tokens = max_new;
  return p;
}

void expect_same(const std::vector<GenerationResult>& a, const std::vector<GenerationResult>& b, const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].tokens, b[i].tokens) << what << " seq " << i;
    EXPECT_EQ(a[i].finish_reason, b[i].finish_reason) << what << " seq " << i;
    ASSERT_EQ(a[i].logprobs.size(), b[i].logprobs.size()) << what;
    for (size_t t = 0; t < a[i].logprobs.size(); ++t) EXPECT_NEAR(a[i].logprobs[t], b[i].logprobs[t], 1e-5) << what;
  }
}

// Prompts of 5, 8, 11, 14, 17, 20 tokens.
std::vector<std::vector<int64_t>> six_prompts() {
  std::vector<std::vector<int64_t>> prompts;
  for (int i = 0; i < 6; ++i) prompts.push_back(std::vector<int64_t>(5 + 3 * i, 1 + i));
  return prompts;
}

}  // namespace

// Run on both decode paths: with a decode graph finished rows would otherwise stay in the batch.
class InFlightBudget : public ::testing::TestWithParam<SamplingParams::DecodeGraphMode> {};

TEST_P(InFlightBudget, PeakStaysWithinTheBudgetAndResultsAreUnchanged) {
  Transformer m = fixtures::random_model();
  const auto prompts = six_prompts();
  SamplingParams p = sampling(4);
  p.decode_graph = GetParam();
  SamplerStats unl;
  const auto all = rollout::generate(m, prompts, p, 3, 6, &unl);
  // Unlimited: all 6 rows at once; KV after the prefill 5+8+11+14+17+20 = 75, +6 per decode step, 3 decode
  // steps (the 4th token is never fed): 93.
  EXPECT_EQ(unl.peak_rows, 6);
  EXPECT_EQ(unl.peak_tokens_in_flight, 93);
  EXPECT_EQ(unl.prefills, 1);

  // Budget 40; reservations prompt + 4 = 9, 12, 15, 18, 21, 24.
  //   {9, 12, 15} = 36 (+18 = 54 > 40): KV 5+8+11 = 24 -> 27 -> 30 -> 33, then all finish together.
  //   {18, 21} = 39 (+24 = 63 > 40):    KV 14+17 = 31 -> 33 -> 35 -> 37.
  //   {24}:                             KV 20 -> 23.
  // Peak 37 <= 40 with 3 rows.
  p.max_tokens_in_flight = 40;
  SamplerStats st;
  expect_same(rollout::generate(m, prompts, p, 3, 6, &st), all, "budget 40");
  EXPECT_EQ(st.peak_tokens_in_flight, 37);
  EXPECT_LE(st.peak_tokens_in_flight, p.max_tokens_in_flight);
  EXPECT_EQ(st.peak_rows, 3);
  EXPECT_EQ(st.prefills, 3);
  // 3 + 2 + 3 decode steps per group, against 3 for the unlimited run.
  EXPECT_EQ(st.decode_steps, 9);
  EXPECT_EQ(unl.decode_steps, 3);

  // max_batch still applies on top of the budget. 2 slots, budget 40:
  //   {9, 12} = 21:            KV 5+8 = 13 -> 19.
  //   {15, 18} = 33:           KV 11+14 = 25 -> 31.
  //   {21} (+24 = 45 > 40):    KV 17 -> 20; then {24}: KV 20 -> 23.
  // Peak 31 with 2 rows, 4 prefills.
  SamplerStats two;
  expect_same(rollout::generate(m, prompts, p, 3, 2, &two), all, "budget 40, 2 slots");
  EXPECT_EQ(two.peak_tokens_in_flight, 31);
  EXPECT_EQ(two.peak_rows, 2);
  EXPECT_EQ(two.prefills, 4);
}

TEST_P(InFlightBudget, ABudgetBelowTwoRequestsRunsThemOneAfterTheOther) {
  Transformer m = fixtures::random_model();
  const std::vector<std::vector<int64_t>> prompts = {std::vector<int64_t>(5, 1), std::vector<int64_t>(8, 2)};
  SamplingParams p = sampling(4);
  p.decode_graph = GetParam();
  SamplerStats unl;
  const auto all = rollout::generate(m, prompts, p, 7, 8, &unl);
  EXPECT_EQ(unl.peak_rows, 2);
  EXPECT_EQ(unl.peak_tokens_in_flight, (5 + 3) + (8 + 3));  // 19

  // Reservations 9 and 12: 21 > 20, so the second waits for the first to leave.
  p.max_tokens_in_flight = 20;
  SamplerStats st;
  expect_same(rollout::generate(m, prompts, p, 7, 8, &st), all, "budget 20");
  EXPECT_EQ(st.peak_rows, 1);
  EXPECT_EQ(st.prefills, 2);
  EXPECT_EQ(st.peak_tokens_in_flight, 8 + 3);  // the longer one alone: 11

  // A request whose own reservation exceeds the budget still runs, alone (documented): budget 5 < 9.
  p.max_tokens_in_flight = 5;
  expect_same(rollout::generate(m, prompts, p, 7, 8, &st), all, "budget 5");
  EXPECT_EQ(st.peak_rows, 1);
  EXPECT_EQ(st.peak_tokens_in_flight, 11);

  p.max_tokens_in_flight = -1;
  EXPECT_THROW(rollout::generate(m, prompts, p, 7, 8), spade::Error);
}

INSTANTIATE_TEST_SUITE_P(DecodeSteps, InFlightBudget,
                         ::testing::Values(SamplingParams::DecodeGraphMode::kOff, SamplingParams::DecodeGraphMode::kOn),
                         [](const ::testing::TestParamInfo<SamplingParams::DecodeGraphMode>& info) {
                           return info.param == SamplingParams::DecodeGraphMode::kOff ? std::string("Forward")
                                                                                      : std::string("Graph");
                         });

// GenerationSession: a row reserves its WHOLE history (cached + pending) plus its own cap.
// Turn 1 (unlimited, cap 3): prompts of 4, 6, 8 tokens -> histories of 7, 9, 11; then 2 tokens are
// appended to each -> 9, 11, 13. Turn 2, caps {2, 5, 3}: reservations 11, 16, 16.
//   Unlimited: KV 9+11+13 = 33 -> 36 after the first decode step; row 0 then finishes at its cap of 2
//   and the batch only shrinks: peak 36 with 3 rows.
//   Budget 25: 11 + 16 = 27 > 25 -> each runs alone: row 0 KV 9 -> 10; row 1 11 -> 15; row 2 13 -> 15.
//   Peak 15, 1 row.
TEST(InFlightBudgetSession, ReservesHistoryPlusCapPerRow) {
  Transformer m = fixtures::random_model("qwen2");
  std::vector<std::vector<GenerationResult>> out(2);
  std::vector<SamplerStats> stats(2);
  std::vector<std::vector<std::vector<int64_t>>> histories(2);
  for (int run = 0; run < 2; ++run) {
    GenerationSession session(m);
    std::vector<size_t> ids;
    for (int len : {4, 6, 8}) ids.push_back(session.add_sequence(std::vector<int64_t>(len, len)));
    session.generate(ids, sampling(3), 1, 8);
    for (size_t id : ids) session.append(id, {20, 21});
    SamplingParams p = sampling(8);
    if (run == 1) p.max_tokens_in_flight = 25;
    out[run] = session.generate(ids, p, 2, 8, {2, 5, 3}, &stats[run]);
    for (size_t id : ids) histories[run].push_back(session.tokens(id));
  }
  expect_same(out[1], out[0], "session budget 25");
  EXPECT_EQ(histories[1], histories[0]);
  EXPECT_EQ(stats[0].peak_rows, 3);
  EXPECT_EQ(stats[0].peak_tokens_in_flight, 36);
  EXPECT_EQ(stats[1].peak_rows, 1);
  EXPECT_EQ(stats[1].peak_tokens_in_flight, 15);
  EXPECT_EQ(stats[1].prefills, 3);
}
