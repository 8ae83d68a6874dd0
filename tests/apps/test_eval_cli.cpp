// `spade eval` end to end (apps/cmd_eval.cpp): the real binary on a tiny checkpoint written by the
// test whose every turn ends at once (the end of turn is made its likeliest token), so an environment
// that is won on any answer is won on every play and one that is never won is lost on every play.
// `spade eval compare` on two --json files written by hand.
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

// `spade eval compare BEFORE AFTER --json OUT` on two evaluations written by hand: one greedy pass of
// one set, 4 plays per environment; logic/x 0 -> 2 wins (+0.5, up), math/y 1 -> 1 (0, same).
TEST(EvalCli, CompareTwoEvaluationsPrintsThePairedDifference) {
  const fs::path dir = fs::path(SPADE_TEST_TMP) / "eval_compare_cli";
  fs::remove_all(dir);
  fs::create_directories(dir);
  auto eval_json = [](int x_wins, int y_wins, double temperature) {
    const nlohmann::json envs = nlohmann::json::array(
        {{{"skill", "logic"}, {"name", "x"}, {"path", "s/logic/x.py"}, {"plays", 4}, {"wins", x_wins}},
         {{"skill", "math"}, {"name", "y"}, {"path", "s/math/y.py"}, {"plays", 4}, {"wins", y_wins}}});
    const nlohmann::json set = {{"set", "s"}, {"plays", 4}, {"reset_seeds", "heldout"}, {"environments", envs}};
    return nlohmann::json{{"checkpoint", "ck"}, {"passes", {{{"temperature", temperature}, {"sets", {set}}}}}}.dump(2);
  };
  const std::string before = (dir / "before.json").string(), after = (dir / "after.json").string();
  const std::string sampled = (dir / "sampled.json").string(), out = (dir / "cmp.json").string();
  write_file_atomic(before, eval_json(0, 1, 0));
  write_file_atomic(after, eval_json(2, 1, 0));
  write_file_atomic(sampled, eval_json(2, 1, 0.6));
  const auto r = spade_cmd("eval compare " + before + " " + after + " --json " + out);
  ASSERT_EQ(r.rc, 0) << r.out;
  // By hand: before 1 of 8 plays = 12.5%, after 3 of 8 = 37.5%, difference (0.5 + 0) / 2 = +25 points;
  // a resample of the 2 environments is all y (mean 0) or all x (mean 0.5) with probability 1/4 each,
  // so of 10000 resamples about 2500 sit at each end and the 2.5% and 97.5% quantiles are 0 and 0.5.
  EXPECT_TRUE(has(r.out, "paired percentile")) << r.out;
  EXPECT_TRUE(has(r.out, "temperature 0 (greedy), s: 2 environments x 4 plays, heldout reset seeds")) << r.out;
  EXPECT_TRUE(has(r.out, "overall: before 1/8 = 12.5%, after 3/8 = 37.5%, difference +25.0 pts [+0.0, +50.0] "
                         "(paired bootstrap over 2 environments, 10000 resamples), up 1 / down 0 / same 1"))
      << r.out;
  EXPECT_TRUE(has(r.out, "logic (1 environment): before 0/4 = 0.0%, after 2/4 = 50.0%, difference +50.0 pts")) << r.out;
  const nlohmann::json j = nlohmann::json::parse(read_file(out));
  EXPECT_EQ(j["before"], before);
  const nlohmann::json& o = j["passes"][0]["sets"][0]["overall"];
  EXPECT_EQ(o["before"]["wins"], 1);
  EXPECT_EQ(o["after"]["wins"], 3);
  EXPECT_DOUBLE_EQ(o["difference"]["mean"].get<double>(), 0.25);
  EXPECT_DOUBLE_EQ(o["difference"]["ci95"][0].get<double>(), 0.0);
  EXPECT_DOUBLE_EQ(o["difference"]["ci95"][1].get<double>(), 0.5);
  EXPECT_EQ(o["up"], 1);
  EXPECT_EQ(o["same"], 1);
  // The JSON is not overwritten without --overwrite; a pass in one file only is an error naming both.
  const auto again = spade_cmd("eval compare " + before + " " + after + " --json " + out);
  EXPECT_EQ(again.rc, 1) << again.out;
  EXPECT_TRUE(has(again.out, "--overwrite")) << again.out;
  EXPECT_EQ(spade_cmd("eval compare " + before + " " + after + " --json " + out + " --overwrite").rc, 0);
  const auto unpaired = spade_cmd("eval compare " + before + " " + sampled);
  EXPECT_EQ(unpaired.rc, 1) << unpaired.out;
  EXPECT_TRUE(has(unpaired.out, "the pass at temperature 0 (greedy) is in " + before + " and not in " + sampled))
      << unpaired.out;
  // Usage: eval still needs --checkpoint without compare; eval's options are not compare's; a misspelt
  // compare gets its suggestion.
  const auto bare = spade_cmd("eval --plays 2");
  EXPECT_EQ(bare.rc, 2) << bare.out;
  EXPECT_TRUE(has(bare.out, "--checkpoint is required")) << bare.out;
  const auto mixed = spade_cmd("eval --plays 2 compare " + before + " " + after);
  EXPECT_EQ(mixed.rc, 2) << mixed.out;
  EXPECT_TRUE(has(mixed.out, "--plays is an option of 'spade eval', not of 'spade eval compare'")) << mixed.out;
  const auto typo = spade_cmd("eval compre " + before + " " + after);
  EXPECT_EQ(typo.rc, 2) << typo.out;
  EXPECT_TRUE(has(typo.out, "did you mean 'eval compare'?")) << typo.out;
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
