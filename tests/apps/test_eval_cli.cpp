// `spade eval` end to end (apps/cmd_eval.cpp): the real binary on a tiny checkpoint written by the
// test whose every turn ends at once (the end of turn is made its likeliest token), so an environment
// that is won on any answer is won on every play and one that is never won is lost on every play.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "common/atomic_file.h"
#include "policy/checkpoint.h"
#include "tests/testing/test_util.h"
#include "tests/testing/tiny_policy.h"

using namespace spade;
namespace fs = std::filesystem;

namespace {

fixtures::CommandResult spade_cmd(const std::string& args) {
  return fixtures::run_command(std::string("OMP_WAIT_POLICY=PASSIVE ") + SPADE_BIN + " " + args + " 2>&1");
}

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

TEST(EvalCli, PlaysEverySetGreedyAndSampledAndWritesJson) {
  const fs::path dir = fs::path(SPADE_TEST_TMP) / "eval_cli";
  fs::remove_all(dir);
  fs::create_directories(dir / "set" / "logic");
  fs::create_directories(dir / "set" / "math");
  fixtures::TinyPolicy p = fixtures::make_tiny_policy(5);
  {
    torch::NoGradGuard ng;
    torch::Tensor e = p.model->named_parameters()["model.embed_tokens.weight"];
    e.select(1, 0).fill_(1.0);
    e[p.chat->eos_id()][0] = 2.0;
  }
  policy::CheckpointSaveOptions so;
  so.tokenizer_model = fixtures::tiny_tokenizer_path();
  const std::string ckpt = (dir / "ckpt").string();
  policy::save_checkpoint(ckpt, p.model, so);
  write_file_atomic((dir / "set/logic/win.py").string(),
                    "class WinEnv:\n    def __init__(self, max_turns=5, **kwargs):\n        pass\n"
                    "    def reset(self, seed=None):\n        return 'Say anything.', {}\n"
                    "    def step(self, action):\n        return 'yes', 1.0, True, False, {}\n");
  write_file_atomic((dir / "set/math/lose.py").string(),
                    "class LoseEnv:\n    def __init__(self, max_turns=5, **kwargs):\n        pass\n"
                    "    def reset(self, seed=None):\n        return 'Say anything.', {}\n"
                    "    def step(self, action):\n        return 'no', -1.0, True, False, {}\n");
  const std::string json = (dir / "out.json").string();
  const auto r = spade_cmd("eval --checkpoint " + ckpt + " --envs " + (dir / "set").string() + " --plays 3 --json " + json);
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_TRUE(has(r.out, "the paper defaults")) << r.out;  // no --config, not in a run directory
  EXPECT_TRUE(has(r.out, "temperature 0 (greedy)")) << r.out;
  EXPECT_TRUE(has(r.out, "temperature 0.6")) << r.out;
  EXPECT_TRUE(has(r.out, "logic/win (3/3)")) << r.out;
  EXPECT_TRUE(has(r.out, "math/lose (0/3)")) << r.out;
  const nlohmann::json j = nlohmann::json::parse(read_file(json));
  ASSERT_EQ(j["passes"].size(), 2u);
  for (const auto& pass : j["passes"]) {
    const auto& set = pass["sets"][0];
    EXPECT_EQ(set["environments"][0]["wins"], 3);
    EXPECT_EQ(set["environments"][1]["wins"], 0);
    EXPECT_DOUBLE_EQ(set["overall"]["success"].get<double>(), 0.5);
    EXPECT_EQ(set["reset_seeds"], "heldout");
    EXPECT_EQ(set["environments"][0]["pass_at_k"].size(), 3u);
  }
  // The JSON is not overwritten without --overwrite; a bad --reset-seeds is a usage error.
  const auto again = spade_cmd("eval --checkpoint " + ckpt + " --envs " + (dir / "set").string() + " --plays 1 --json " + json);
  EXPECT_EQ(again.rc, 1) << again.out;
  EXPECT_TRUE(has(again.out, "--overwrite")) << again.out;
  const auto bad = spade_cmd("eval --checkpoint " + ckpt + " --reset-seeds test");
  EXPECT_EQ(bad.rc, 2) << bad.out;
  EXPECT_TRUE(has(bad.out, "--reset-seeds")) << bad.out;
}

// data/heldout_envs passes the validation gates: every program admitted (exit 0), as the training
// seeds are.
TEST(EvalCli, HeldoutGamesAreAdmittedByTheGates) {
  const std::string dir = std::string(SPADE_SOURCE_DIR) + "/data/heldout_envs";
  const auto r = spade_cmd("envs check " + dir + "/*/*.py");
  EXPECT_EQ(r.rc, 0) << r.out;
  size_t admitted = 0;
  for (size_t at = r.out.find("ADMITTED"); at != std::string::npos; at = r.out.find("ADMITTED", at + 1)) ++admitted;
  EXPECT_EQ(admitted, 30u) << r.out;
}

}  // namespace
