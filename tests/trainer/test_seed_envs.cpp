// Seed environments (issue 2 step 2): at least 30, all six skills, each admitted by the validation
// gates in the sandbox (the solution gate included: solution() wins from the probe seeds 42, 123, 7),
// and each solution() wins (reward 1.0, terminated) from reset seeds 0..4.
#include <gtest/gtest.h>

#include <map>

#include "common/atomic_file.h"
#include "common/error.h"
#include "envsandbox/game.h"
#include "envsandbox/sandbox.h"
#include "envsandbox/validate.h"
#include "rollout/prompts.h"
#include "trainer/seed_envs.h"

using namespace spade;

namespace {

// From reset seeds 0..4, env's solution() wins: terminated with reward 1.0. Each action is sent as
// \boxed{action} (games) or as written (tool use: whole agent responses).
void expect_solution_wins(envsandbox::EnvServer& server, const trainer::SeedEnv& env, bool box) {
  for (int seed = 0; seed < 5; ++seed) {
    std::string reason;
    auto game = envsandbox::Game::open(server, env.code, 25, &reason);
    ASSERT_TRUE(game) << env.path << ": " << reason;
    ASSERT_TRUE(game->reset(seed, &reason)) << env.path << ": " << reason;
    std::vector<std::string> actions = game->solution(&reason);
    ASSERT_FALSE(actions.empty()) << env.path << ": " << reason;
    envsandbox::GameStep step;
    for (const std::string& a : actions) {
      step = game->step(box ? "\\boxed{" + a + "}" : a);
      if (step.terminated || step.truncated) break;
    }
    EXPECT_TRUE(step.terminated) << env.path << " seed " << seed;
    EXPECT_EQ(step.reward, 1.0) << env.path << " seed " << seed;
  }
}

}  // namespace

TEST(SeedEnvs, CoverAllSkillsAndPassGatesAndSolutionsWin) {
  const auto seeds = trainer::load_seed_envs(std::string(SPADE_SOURCE_DIR) + "/data/seed_envs");
  ASSERT_GE(seeds.size(), 30u);
  std::map<std::string, int> per_skill;
  for (const auto& s : seeds) ++per_skill[s.skill];
  for (const rollout::Skill& skill : rollout::game_skills()) EXPECT_GE(per_skill[skill.slug], 5) << skill.slug;

  envsandbox::EnvServer server;
  for (const auto& env : seeds) {
    envsandbox::ValidationReport report = envsandbox::validate_game(server, env.code);
    EXPECT_TRUE(report.admitted) << env.path << ": " << report.reason << " " << report.detail;
    // Issue 17: the solution gate ran (every seed has solution()) and its solution won from the probe seeds.
    ASSERT_FALSE(report.gates.empty()) << env.path;
    EXPECT_EQ(report.gates.back().gate, "solution_wins") << env.path;
    EXPECT_EQ(report.gates.back().verdict, "pass") << env.path << ": " << report.gates.back().detail;
    expect_solution_wins(server, env, /*box=*/true);
  }
}

// Tool-use seeds and held-out programs (issue 21): 2 seeds and 1 held-out program per tool-use skill
// (data/tooluse_seed_envs/README.md), each admitted by every gate with the tool-use gates on (tool
// schemas, deterministic reset; the solution gate plays solution() as written), and each solution() —
// whole agent responses: tool calls, then <answer> — wins (reward 1.0, terminated) from reset seeds 0..4.
TEST(SeedEnvs, ToolUseSeedsAndHeldOutPassEveryGateAndSolutionsWin) {
  const std::string root = SPADE_SOURCE_DIR;
  const std::vector<std::string> skills = {"api_orchestration", "data_retrieval", "state_modification",
                                           "error_recovery", "tool_selection", "multi_step_workflows"};
  envsandbox::EnvServer server;
  envsandbox::ValidateOptions vo;
  vo.tool_use = true;
  for (const auto& [dir, per_skill_min] : std::vector<std::pair<std::string, int>>{{"tooluse_seed_envs", 2}, {"tooluse_heldout_envs", 1}}) {
    const auto envs = trainer::load_seed_envs(root + "/data/" + dir);
    std::map<std::string, int> per_skill;
    for (const auto& s : envs) ++per_skill[s.skill];
    for (const auto& skill : skills) EXPECT_GE(per_skill[skill], per_skill_min) << dir << "/" << skill;
    EXPECT_EQ(per_skill.size(), skills.size()) << dir << ": a folder that is not a tool-use skill";
    for (const auto& env : envs) {
      envsandbox::ValidationReport report = envsandbox::validate_game(server, env.code, vo);
      EXPECT_TRUE(report.admitted) << env.path << ": " << report.reason << " " << report.detail;
      expect_solution_wins(server, env, /*box=*/false);
    }
  }
}

// The task variants of the tool-use seeds (reference §7: execute, read-then-write, missing-parameter,
// irrelevant in a 3:2:1:1 mix): each program declares its variant in its header; the 18 seeds hold
// 8 / 4 / 3 / 3 (counted by hand from the headers and data/tooluse_seed_envs/README.md; 3:2:1:1 of 18
// would be 7.7 / 5.1 / 2.6 / 2.6).
TEST(SeedEnvs, ToolUseSeedsDeclareTheVariantMix) {
  std::map<std::string, int> n;
  for (const auto& env : trainer::load_seed_envs(std::string(SPADE_SOURCE_DIR) + "/data/tooluse_seed_envs"))
    ++n[rollout::declared_tooluse_variant(env.code)];
  EXPECT_EQ(n, (std::map<std::string, int>{{"execute", 8}, {"read-then-write", 4}, {"missing-parameter", 3}, {"irrelevant", 3}}));
}

// An irrelevant-variant environment (error_recovery/ticket_support.py: the last request, a card refund,
// matches no tool) rewards only a decline of that request: "done" is refused, a decline shown before
// the refund request is refused, and a decline once it is shown wins (reward 1.0, terminated).
TEST(SeedEnvs, IrrelevantVariantRewardsOnlyADecline) {
  const std::string code =
      read_file(std::string(SPADE_SOURCE_DIR) + "/data/tooluse_seed_envs/error_recovery/ticket_support.py");
  envsandbox::EnvServer server;
  const std::string decline = "<answer>Sorry, I cannot issue refunds.</answer>";
  std::string reason;
  auto early = envsandbox::Game::open(server, code, 25, &reason);
  ASSERT_TRUE(early && early->reset(0, &reason)) << reason;
  envsandbox::GameStep s = early->step(decline);  // nothing done yet and no refund asked for
  EXPECT_FALSE(s.terminated);
  EXPECT_EQ(s.reward, 0.0);

  for (const std::string& last : {std::string("<answer>done</answer>"), decline}) {
    auto game = envsandbox::Game::open(server, code, 25, &reason);
    ASSERT_TRUE(game && game->reset(0, &reason)) << reason;
    std::vector<std::string> actions = game->solution(&reason);
    ASSERT_EQ(actions.size(), 6u) << reason;  // five tool calls, then the decline
    for (size_t i = 0; i + 1 < actions.size(); ++i) {
      s = game->step(actions[i]);
      ASSERT_FALSE(s.terminated || s.truncated || s.broken()) << actions[i];
    }
    EXPECT_NE(s.obs.find("refund"), std::string::npos) << s.obs;  // the last request is now shown
    s = game->step(last);
    EXPECT_EQ(s.terminated, last == decline) << last;
    EXPECT_EQ(s.reward, last == decline ? 1.0 : 0.0) << last;
  }
}

// A run's seed folder must hold environments of its setting (trainer/seed_envs.h check_seed_setting).
TEST(SeedEnvs, SeedFolderMustMatchTheSetting) {
  const std::string root = SPADE_SOURCE_DIR;
  const auto tools = trainer::load_seed_envs(root + "/data/tooluse_seed_envs");
  const auto games = trainer::load_seed_envs(root + "/data/seed_envs");
  EXPECT_NO_THROW(trainer::check_seed_setting(tools, "tool_use", "seed_envs.dir"));
  EXPECT_NO_THROW(trainer::check_seed_setting(games, "games", "seed_envs.dir"));
  try {
    trainer::check_seed_setting(tools, "games", "seed_envs.dir");
    FAIL() << "tool-use seeds accepted by a games run";
  } catch (const spade::Error& e) {
    const std::string what = e.what();
    EXPECT_EQ(what.rfind("seed_envs.dir: " + tools.front().path + " is a tool_use environment", 0), 0u) << what;
    EXPECT_NE(what.find("selfplay.setting is games"), std::string::npos) << what;
  }
  EXPECT_THROW(trainer::check_seed_setting(games, "tool_use", "selfplay.pool_dir"), spade::Error);
}
