// The agent harness with the replay policy: steps, sentinel, truncation, limits, recovery turns.
#include <gtest/gtest.h>

#include <filesystem>

#include <nlohmann/json.hpp>

#include "common/atomic_file.h"
#include "evaldual/harness.h"
#include "tests/evaldual/duel_test_util.h"

namespace fs = std::filesystem;
using namespace spade::evaldual;
using spade::evaldual::testing::fresh_dir;

namespace {
HarnessConfig quick_config() {
  HarnessConfig c;
  c.step_limit = 5;
  c.recovery_turns = 2;
  c.recovery_steps = 2;
  c.wall_clock_s = 60;
  c.command_limits.timeout_s = 10;
  c.observation_max_chars = 200;
  return c;
}
}  // namespace

TEST(DuelHarness, ExtractsBashBlocks) {
  EXPECT_EQ(bash_blocks("THOUGHT: x\n```bash\nls -la\n```"), std::vector<std::string>{"ls -la"});
  EXPECT_EQ(bash_blocks("```bash\na\n```\n```bash\nb\n```").size(), 2u);
  EXPECT_TRUE(bash_blocks("```python\nprint(1)\n```").empty());
}

TEST(DuelHarness, ReplaySubmitsAndSavesTrajectory) {
  std::string ws = fresh_dir("ws");
  WorkspaceSandbox sb(ws);
  ReplayPolicy p({"echo hello > a.txt", "cat a.txt", "seq 1 1000", "RAW:no block here",
                  "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"});
  std::string traj = ws + "/../traj.json";
  SessionResult r = run_session(p, sb, "write a.txt", quick_config(), nullptr, traj);
  EXPECT_EQ(r.exit, ExitStatus::Submitted);
  ASSERT_EQ(r.steps.size(), 5u);
  EXPECT_NE(r.steps[1].observation.find("<returncode>0</returncode>\n<output>\nhello\n</output>"), std::string::npos);
  EXPECT_NE(r.steps[2].observation.find("characters elided"), std::string::npos);  // truncated
  EXPECT_LT(r.steps[2].observation.size(), 400u);
  EXPECT_EQ(r.steps[3].rc, -2);
  EXPECT_NE(r.steps[3].observation.find("exactly one ```bash block"), std::string::npos);
  EXPECT_EQ(spade::read_file(ws + "/a.txt"), "hello\n");
  auto j = nlohmann::json::parse(spade::read_file(traj));
  EXPECT_EQ(j["exit_status"], "Submitted");
  EXPECT_EQ(j["steps"].size(), 5u);
  EXPECT_EQ(j["steps"][0]["action"], "echo hello > a.txt");
}

TEST(DuelHarness, StepLimitEndsSession) {
  WorkspaceSandbox sb(fresh_dir("ws"));
  ReplayPolicy p(std::vector<std::string>(20, "true"));
  SessionResult r = run_session(p, sb, "loop", quick_config());
  EXPECT_EQ(r.exit, ExitStatus::LimitsExceeded);
  EXPECT_EQ(r.steps.size(), 5u);
}

TEST(DuelHarness, RecoveryTurnsNameMissingArtifacts) {
  std::string ws = fresh_dir("ws");
  WorkspaceSandbox sb(ws);
  // Submits at once without the artifact, then creates it during the first recovery turn.
  ReplayPolicy p({"echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT", "echo spec > spec.md",
                  "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"});
  ArtifactCheck missing = [&] {
    return fs::exists(ws + "/spec.md") ? std::vector<std::string>{} : std::vector<std::string>{"spec.md (the feature spec)"};
  };
  SessionResult r = run_session(p, sb, "write spec.md", quick_config(), missing);
  EXPECT_EQ(r.exit, ExitStatus::Submitted);
  EXPECT_EQ(r.recovery_turns_used, 1);
  EXPECT_TRUE(r.missing_artifacts.empty());
  bool reminded = false;
  for (const auto& m : r.messages) reminded |= m.content.find("missing:\n- spec.md (the feature spec)") != std::string::npos;
  EXPECT_TRUE(reminded);
  EXPECT_TRUE(r.steps[1].recovery);
}

TEST(DuelHarness, RecoveryExhaustedLeavesArtifactsMissing) {
  WorkspaceSandbox sb(fresh_dir("ws"));
  ReplayPolicy p(std::vector<std::string>(30, "true"));
  ArtifactCheck missing = [] { return std::vector<std::string>{"metadata.json"}; };
  SessionResult r = run_session(p, sb, "x", quick_config(), missing);
  EXPECT_EQ(r.exit, ExitStatus::LimitsExceeded);
  EXPECT_EQ(r.recovery_turns_used, 2);
  EXPECT_EQ(r.steps.size(), 5u + 2 * 2);
  EXPECT_EQ(r.missing_artifacts, std::vector<std::string>{"metadata.json"});
}

TEST(DuelHarness, WallClockAndCommandTimeout) {
  WorkspaceSandbox sb(fresh_dir("ws"));
  HarnessConfig c = quick_config();
  c.wall_clock_s = 1.5;
  ReplayPolicy p({"sleep 30", "true"});
  SessionResult r = run_session(p, sb, "x", c);
  EXPECT_EQ(r.exit, ExitStatus::WallClockTimeout);
  ASSERT_GE(r.steps.size(), 1u);
  EXPECT_EQ(r.steps[0].rc, -1);
  EXPECT_NE(r.steps[0].observation.find("timed out"), std::string::npos);
  EXPECT_LT(r.seconds, 5.0);
}
