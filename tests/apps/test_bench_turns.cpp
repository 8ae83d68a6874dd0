// `spade bench turns` (apps/cmd_bench_turns.cpp) end to end on the tiny shape: both schedules sample
// every turn's length, and their rounds (SamplerStats::rounds: one token per running row per round) are
// what the two schedules give by hand from the turn lengths the bench reports, with a slot for every
// sequence: lockstep = sum over turn numbers k of the longest k-th turn (every turn k waits for it);
// continuous = the longest sequence's total (a follow-up turn samples its first token in the round
// after its previous turn ended). Bad options are errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "tests/testing/test_util.h"

using namespace spade;

namespace {

fixtures::CommandResult run_bench(const std::string& args) {
  return fixtures::run_command(std::string("OMP_WAIT_POLICY=PASSIVE ") + SPADE_BIN + " bench turns " + args + " 2>&1");
}

}  // namespace

TEST(BenchTurns, RoundsOfBothSchedulesFollowFromTheTurnLengths) {
  const fixtures::CommandResult r = run_bench(
      "--sequences 5 --turns 3 --prompt 12 --observation 4 --min-new 2 --max-new 20 --max-batch 5 --threads 1");
  ASSERT_EQ(r.rc, 0) << r.out;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  const auto lengths = j.at("turn_lengths").get<std::vector<std::vector<int>>>();
  ASSERT_EQ(lengths.size(), 5u);
  int64_t tokens = 0, longest_total = 0, lockstep = 0;
  for (size_t k = 0; k < 3; ++k) {
    int longest_kth = 0;
    for (const auto& seq : lengths) longest_kth = std::max(longest_kth, seq.at(k));
    lockstep += longest_kth;
  }
  for (const auto& seq : lengths) {
    int64_t total = 0;
    for (int l : seq) {
      EXPECT_GE(l, 2);
      EXPECT_LE(l, 20);
      total += l;
    }
    tokens += total;
    longest_total = std::max(longest_total, total);
  }
  EXPECT_EQ(j.at("sampled_tokens").get<int64_t>(), tokens);
  EXPECT_EQ(j.at("lockstep").at("rounds").get<int64_t>(), lockstep);
  EXPECT_EQ(j.at("continuous").at("rounds").get<int64_t>(), longest_total);
  EXPECT_LT(longest_total, lockstep) << "these turn lengths differ, so lockstep waits";
  EXPECT_GT(j.at("continuous").at("tokens_per_s").get<double>(), 0);
  EXPECT_LE(j.at("same_histories").get<int>(), 5);
}

TEST(BenchTurns, BadOptionsAreErrors) {
  const std::vector<std::pair<std::string, std::string>> cases = {{"--min-new 9 --max-new 3", "max-new >= min-new"},
                                                                  {"--sequences 0", "bench turns"},
                                                                  {"--dtype float16", "float16"},
                                                                  {"--model tiny7b", "tiny7b"}};
  for (const auto& [args, named] : cases) {
    const fixtures::CommandResult r = run_bench(args);
    EXPECT_NE(r.rc, 0) << args;
    EXPECT_NE(r.out.find(named), std::string::npos) << args << ": " << r.out;
  }
}
