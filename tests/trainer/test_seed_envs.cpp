// Seed environments (issue 2 step 2): at least 30, all six skills, each admitted by the validation
// gates in the sandbox (the solution gate included: solution() wins from the probe seeds 42, 123, 7),
// and each solution() wins (reward 1.0, terminated) from reset seeds 0..4.
#include <gtest/gtest.h>

#include <map>

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
