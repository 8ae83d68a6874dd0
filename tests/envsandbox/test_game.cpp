// The lenient play wrapper (spade-reference.md §3).
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
  EXPECT_EQ(s.failure, "");
}

TEST(Game, MalformedReturnIsInvalidGameResponse) {
  auto game = Game::open(shared_server(), program("step_four_tuple.py"), 25, nullptr);
  ASSERT_NE(game, nullptr);
  ASSERT_TRUE(game->reset(std::nullopt));
  GameStep s = game->step("x");
  EXPECT_EQ(s.obs, "Invalid game response");  // reference §3
  EXPECT_EQ(s.reward, -1.0);
  EXPECT_TRUE(s.terminated);
  EXPECT_EQ(s.failure, "");
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
  EXPECT_EQ(s.failure, "timeout");
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
