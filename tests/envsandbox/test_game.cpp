// The lenient play wrapper (reference §3).
#include <gtest/gtest.h>

#include "envsandbox/game.h"
#include "test_util.h"

namespace spade::envsandbox {
namespace {

using testing::program;
using testing::shared_server;

TEST(Game, ExceptionInStepBecomesErrorObservation) {
  std::string reason;
  auto game = Game::open(shared_server(), program("raises_in_step.py"), 25, &reason);
  ASSERT_NE(game, nullptr) << reason;
  ASSERT_TRUE(game->reset(1));
  GameStep s = game->step("left");
  // Reference §3: ("Error: ...", -1.0, terminated).
  EXPECT_EQ(s.obs, "Error: bad move left");
  EXPECT_EQ(s.reward, -1.0);
  EXPECT_TRUE(s.terminated);
  EXPECT_EQ(s.failure, CallStatus::kOk);
  EXPECT_EQ(s.refused, "step_exception");
  EXPECT_FALSE(s.won());
}

TEST(Game, MalformedReturnIsInvalidGameResponse) {
  auto game = Game::open(shared_server(), program("step_four_tuple.py"), 25, nullptr);
  ASSERT_NE(game, nullptr);
  ASSERT_TRUE(game->reset(std::nullopt));
  GameStep s = game->step("x");
  EXPECT_EQ(s.obs, "Invalid game response");  // reference §3
  EXPECT_EQ(s.reward, -1.0);
  EXPECT_TRUE(s.terminated);
  EXPECT_EQ(s.failure, CallStatus::kOk);
  EXPECT_EQ(s.refused, "step_bad_return");
}

// Issue 17: a NaN or infinite reward never leaves the boundary. The step is refused as an invalid game
// response (reference §3: ("Invalid game response", -1.0, terminated)) with the reason
// reward_not_finite; a reward that is not a number at all is step_bad_type.
TEST(Game, NonFiniteRewardIsRefusedWithItsReason) {
  const std::string head = "class RewardEnv:\n    def reset(self, seed=None):\n        return 'a', {}\n"
                           "    def step(self, a):\n        return 'o', ";
  const std::pair<const char*, const char*> cases[] = {
      {"float('nan')", "reward_not_finite"},
      {"float('inf')", "reward_not_finite"},
      {"-float('inf')", "reward_not_finite"},
      {"'1.0'", "step_bad_type"},
  };
  for (const auto& [reward, refused] : cases) {
    auto game = Game::open(shared_server(), head + reward + ", True, False, {}\n", 25, nullptr);
    ASSERT_NE(game, nullptr) << reward;
    ASSERT_TRUE(game->reset(0)) << reward;
    GameStep s = game->step("x");
    EXPECT_EQ(s.obs, "Invalid game response") << reward;
    EXPECT_EQ(s.reward, -1.0) << reward;
    EXPECT_TRUE(s.terminated) << reward;
    EXPECT_EQ(s.failure, CallStatus::kOk) << reward;
    EXPECT_EQ(s.refused, refused) << reward;
    EXPECT_NE(s.detail.find("step() reward"), std::string::npos) << s.detail;
  }
  // The same program with a finite reward is accepted as it is.
  auto game = Game::open(shared_server(), head + "0.5, True, False, {}\n", 25, nullptr);
  ASSERT_NE(game, nullptr);
  ASSERT_TRUE(game->reset(0));
  GameStep s = game->step("x");
  EXPECT_EQ(s.reward, 0.5);
  EXPECT_EQ(s.refused, "");
}

// GameStep::won is an agent episode's success: terminated, healthy, reward > 0.
TEST(Game, WonMeansTerminatedWithAPositiveReward) {
  GameStep s;
  s.terminated = true;
  s.reward = 1.0;
  EXPECT_TRUE(s.won());
  s.reward = 0.0;
  EXPECT_FALSE(s.won());  // terminated without reward: a loss
  s.reward = 0.25;
  s.terminated = false;
  s.truncated = true;
  EXPECT_FALSE(s.won());  // truncated: episode reward 0 (reference §3)
  s.terminated = true;
  s.failure = CallStatus::kTimeout;
  EXPECT_FALSE(s.won());  // a broken process
}

TEST(Game, BareStringResetIsTolerated) {
  auto game = Game::open(shared_server(), "class BareEnv:\n    def reset(self, seed=None):\n        return 'hello'\n",
                         25, nullptr);
  ASSERT_NE(game, nullptr);
  EXPECT_EQ(game->reset(3).value_or(""), "hello");  // reference §2: a bare string is tolerated
}

TEST(Game, TimeoutEndsTheEpisodeWithFailure) {
  auto game = Game::open(shared_server(), "class SlowEnv:\n    def reset(self, seed=None):\n        return 'a', {}\n"
                                          "    def step(self, a):\n        while True: pass\n", 25, nullptr);
  ASSERT_NE(game, nullptr);
  ASSERT_TRUE(game->reset(0));
  GameStep s = game->step("x");
  EXPECT_EQ(s.failure, CallStatus::kTimeout);
  EXPECT_TRUE(s.terminated);
}

TEST(Game, ActionIsCappedAt100kCharacters) {
  auto game = Game::open(shared_server(), "class LenEnv:\n    def reset(self, seed=None):\n        return 'a', {}\n"
                                          "    def step(self, a):\n        return str(len(a)), 0, False, False, {}\n",
                         25, nullptr);
  ASSERT_NE(game, nullptr);
  ASSERT_TRUE(game->reset(0));
  EXPECT_EQ(game->step(std::string(150000, 'a')).obs, "100000");  // reference §3
  EXPECT_EQ(game->step("\xc3\xa9\xc3\xa9").obs, "2");                 // characters, not bytes
}

TEST(Game, SolutionWinsTheGame) {
  std::string reason;
  auto game = Game::open(shared_server(), program("good_guess.py"), 25, &reason);
  ASSERT_NE(game, nullptr) << reason;
  ASSERT_TRUE(game->reset(42));
  std::vector<std::string> actions = game->solution(&reason);
  ASSERT_FALSE(actions.empty()) << reason;
  GameStep last;
  for (const std::string& a : actions) last = game->step(a);
  EXPECT_TRUE(last.terminated);
  EXPECT_EQ(last.reward, 1.0);
  EXPECT_EQ(last.obs, "Correct!");
}

TEST(Game, OpenReportsLoadFailures) {
  std::string reason, detail;
  EXPECT_EQ(Game::open(shared_server(), program("syntax_error.py"), 25, &reason, &detail), nullptr);
  EXPECT_EQ(reason, "syntax_error");
  EXPECT_FALSE(detail.empty());
}

}  // namespace
}  // namespace spade::envsandbox
