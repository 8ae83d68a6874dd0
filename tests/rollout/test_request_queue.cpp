// The sampler's schedule phase on its own (rollout/running_batch.h RequestQueue): which requests at the
// head of the queue join the running batch, under max_batch, the prefill budget and the budget of tokens
// in flight; and what the queue does to its sequences when an exception leaves the sampler. No model:
// admission reads only the sequences' token counts. The end-to-end budget tests (test_inflight_budget,
// Session.PrefillBudgetSplits...) check the same rules through generate(); the cases here are the ones
// their prompts cannot tell apart: FIFO without skipping ahead, and the prefill cost of a group as its
// padded columns (longest history + longest pending run), not the longest sequence.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "common/error.h"
#include "rollout/running_batch.h"

using namespace spade;
using rollout::SamplingParams;
using rollout::detail::Request;
using rollout::detail::RequestQueue;
using rollout::detail::Sequence;

namespace {

// A sequence of `cached` tokens with K/V (only the count matters to admission) and `pending` new ones.
Sequence sequence(int64_t cached, int64_t pending) {
  Sequence s;
  s.tokens.assign(cached + pending, 1);
  s.cached = cached;
  return s;
}

std::vector<size_t> tags(const std::vector<Request>& group) {
  std::vector<size_t> out;
  for (const Request& q : group) out.push_back(q.tag);
  return out;
}

SamplingParams budgets(int64_t max_prefill_tokens, int64_t max_tokens_in_flight) {
  SamplingParams p;
  p.max_prefill_tokens = max_prefill_tokens;
  p.max_tokens_in_flight = max_tokens_in_flight;
  return p;
}

}  // namespace

// Reservations (tokens + cap): A 15 + 5 = 20, B 2 + 2 = 4, C 1 + 1 = 2; budget 25.
TEST(RequestQueue, AdmitsInOrderWithoutSkippingAheadOfTheHead) {
  Sequence a = sequence(0, 15), b = sequence(0, 2), c = sequence(0, 1);
  RequestQueue queue;
  queue.push({&a, 5, 0, 0});
  queue.push({&b, 2, 0, 1});
  queue.push({&c, 1, 0, 2});
  const SamplingParams p = budgets(16384, 25);
  // One running row reserving 10: A would make 30 > 25; B (14) and C (12) would fit but stay behind A.
  EXPECT_TRUE(queue.admit(1, 10, 8, p).empty());
  // max_batch full: nothing, whatever the budget.
  EXPECT_TRUE(queue.admit(8, 0, 8, p).empty());
  // An empty batch: A (20), then B (24); C would make 26 > 25.
  EXPECT_EQ(tags(queue.admit(0, 0, 8, p)), (std::vector<size_t>{0, 1}));
  EXPECT_EQ(tags(queue.admit(2, 24, 8, p)), std::vector<size_t>{}) << "C waits for a row to leave";
  EXPECT_EQ(tags(queue.admit(1, 4, 8, p)), std::vector<size_t>{2});
  EXPECT_TRUE(queue.empty());
  for (Sequence* s : {&a, &b, &c}) EXPECT_TRUE(s->in_turn) << "admitted turns are still running";
}

// A request reserving more than the whole budget runs alone: only into a batch with no running row, and
// nothing joins it in the same group. Without a budget (0) only max_batch limits.
TEST(RequestQueue, AnOversizedRequestRunsAloneAndNoBudgetMeansUnlimited) {
  Sequence big = sequence(0, 30), small = sequence(0, 1);
  RequestQueue queue;
  queue.push({&big, 10, 0, 0});
  queue.push({&small, 1, 0, 1});
  EXPECT_TRUE(queue.admit(1, 1, 8, budgets(16384, 20)).empty()) << "40 > 20 with a row running";
  EXPECT_EQ(tags(queue.admit(0, 0, 8, budgets(16384, 20))), std::vector<size_t>{0});
  EXPECT_EQ(tags(queue.admit(1, 40, 8, budgets(16384, 0))), std::vector<size_t>{1});
}

// The prefill budget bounds the group's padded prefill: rows x (longest cached + longest pending).
// X has 12 cached + 1 pending, Y 0 + 10: two rows of 12 + 10 = 22 columns, 44 tokens, though neither
// sequence is longer than 13 (2 x 13 = 26). The first request of a group is taken over any budget.
TEST(RequestQueue, PrefillBudgetCountsTheGroupsPaddedColumns) {
  for (const int64_t budget : {43, 44}) {
    Sequence x = sequence(12, 1), y = sequence(0, 10);
    RequestQueue queue;
    queue.push({&x, 4, 0, 0});
    queue.push({&y, 4, 0, 1});
    const auto first = tags(queue.admit(0, 0, 8, budgets(budget, 0)));
    if (budget == 43) {
      EXPECT_EQ(first, std::vector<size_t>{0});
      EXPECT_EQ(tags(queue.admit(1, 0, 8, budgets(1, 0))), std::vector<size_t>{1}) << "alone over budget 1";
    } else {
      EXPECT_EQ(first, (std::vector<size_t>{0, 1}));
    }
  }
}

TEST(RequestQueue, PushRefusesBadTurns) {
  Sequence s = sequence(3, 2), done = sequence(5, 0);
  RequestQueue queue;
  const auto message = [&](const Request& q) -> std::string {
    try {
      queue.push(q);
    } catch (const spade::Error& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_NE(message({&s, 0, 0, 7}).find("max_new_tokens >= 1"), std::string::npos);
  EXPECT_NE(message({&done, 1, 0, 8}).find("sequence 8 has no new tokens"), std::string::npos);
  EXPECT_EQ(message({&s, 1, 0, 7}), "");
  EXPECT_NE(message({&s, 1, 0, 7}).find("sequence 7 already has a turn queued or running"), std::string::npos);
  EXPECT_FALSE(done.in_turn);
}

// When an exception leaves the sampler, every sequence whose turn is still queued or running has lost its
// K/V: the queue marks it broken and clears it. A turn that ended (in_turn false) keeps its cache; so does
// everything when the queue is destroyed normally.
TEST(RequestQueue, AnExceptionMarksTheSequencesOfUnfinishedTurnsBroken) {
  Sequence queued = sequence(2, 1), running = sequence(0, 4), ended = sequence(0, 3);
  {
    RequestQueue queue;
    queue.push({&running, 1, 0, 0});
    EXPECT_EQ(queue.admit(0, 0, 8, budgets(16384, 0)).size(), 1u);
    EXPECT_TRUE(queue.empty());
  }
  EXPECT_FALSE(running.broken) << "no exception: nothing is marked";
  running.in_turn = false;
  try {
    RequestQueue queue;
    queue.push({&running, 1, 0, 0});
    queue.push({&ended, 1, 0, 1});
    EXPECT_EQ(queue.admit(0, 0, 8, budgets(16384, 0)).size(), 2u);
    ended.in_turn = false;  // its turn ended: the sampler parked its K/V and cleared in_turn
    ended.cached = 3;
    queue.push({&queued, 1, 0, 2});
    throw std::runtime_error("env broke");
  } catch (const std::runtime_error&) {
  }
  for (Sequence* s : {&queued, &running}) {
    EXPECT_TRUE(s->broken);
    EXPECT_FALSE(s->in_turn);
    EXPECT_EQ(s->cached, 0);
  }
  EXPECT_FALSE(ended.broken);
  EXPECT_EQ(ended.cached, 3);
}
