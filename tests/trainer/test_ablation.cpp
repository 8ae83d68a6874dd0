// trainer/ablation.h: the comparison table of `spade ablate`, from hand-written metrics lines whose
// means are computed here by hand. (The command end to end: tests/apps/test_ablate_cli.cpp.)
#include <gtest/gtest.h>

#include "trainer/ablation.h"

namespace spade::trainer {
namespace {

RunMetrics three_step_run() {
  RunMetrics r;
  r.name = "games-tiny-base";
  // Step 0: the eval before self-play. Steps 1-3: self-play; 1 and 3 regenerate (designer/attempts).
  r.steps = {
      nlohmann::json::parse(R"({"step": 0, "eval/heldout_envs/success": 0.10, "eval/heldout_envs/success_low": 0.05,
                                "eval/heldout_envs/success_high": 0.15, "eval/heldout_envs/math/success": 0.5,
                                "eval/heldout_envs/math/success_low": 0.4, "eval/heldout_envs/math/success_high": 0.6})"),
      nlohmann::json::parse(R"({"step": 1, "designer/attempts": 4, "designer/valid_rate": 0.5,
                                "designer/learnable_share": 0.2, "designer/regret": 0.1})"),
      nlohmann::json::parse(R"({"step": 2, "designer/valid_rate": 0.5, "designer/learnable_share": 0.4,
                                "designer/regret": -0.3})"),
      nlohmann::json::parse(R"({"step": 3, "designer/attempts": 4, "designer/valid_rate": 1.0,
                                "designer/learnable_share": 0.6, "designer/regret": 0.5,
                                "eval/heldout_envs/success": 0.25, "eval/heldout_envs/success_low": 0.2,
                                "eval/heldout_envs/success_high": 0.3})")};
  r.summary = nlohmann::json::parse(R"({"finished": true, "wall_seconds": 125.4})");
  return r;
}

TEST(Ablation, RowReadsBeforeAfterAndMeansByHand) {
  const AblationRow row = ablation_row("base", three_step_run());
  EXPECT_EQ(row.steps, 3);
  ASSERT_EQ(row.eval.size(), 1u);  // eval/heldout_envs/math/success is a skill line, not a set
  const EvalBeforeAfter& e = row.eval.at("heldout_envs");
  ASSERT_TRUE(e.before && e.after);
  EXPECT_DOUBLE_EQ(e.before->value, 0.10);
  EXPECT_DOUBLE_EQ(e.before->low, 0.05);
  EXPECT_DOUBLE_EQ(e.after->value, 0.25);
  EXPECT_DOUBLE_EQ(e.after->high, 0.3);
  EXPECT_EQ(e.after_step, 3);
  EXPECT_DOUBLE_EQ(*row.learnable_share, (0.2 + 0.4 + 0.6) / 3);  // every step that logs it
  EXPECT_DOUBLE_EQ(*row.valid_rate, (0.5 + 1.0) / 2);             // regeneration steps 1 and 3 only
  EXPECT_DOUBLE_EQ(*row.regret, (0.1 - 0.3 + 0.5) / 3);
  EXPECT_DOUBLE_EQ(*row.wall_s, 125.4);
}

TEST(Ablation, MarkdownAndJsonShowMissingValuesAsMissing) {
  RunMetrics fixed;  // a fixed-pool run: no designer metrics, no eval
  fixed.name = "games-tiny-fixed_pool";
  fixed.steps = {nlohmann::json::parse(R"({"step": 1, "reward/mean": 0.5})")};
  const std::vector<AblationRow> rows = {ablation_row("base", three_step_run()), ablation_row("fixed_pool", fixed)};
  const std::string md = ablation_markdown(rows);
  EXPECT_NE(md.find("| heldout_envs before | heldout_envs after |"), std::string::npos) << md;
  EXPECT_NE(md.find("| base | games-tiny-base | 3 | 10.0% [5.0, 15.0] | 25.0% [20.0, 30.0] | 0.400 | 0.750 | +0.100 | 125 |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| fixed_pool | games-tiny-fixed_pool | 1 | - | - | - | - | - | - |"), std::string::npos) << md;
  const nlohmann::json j = ablation_json(rows);
  ASSERT_EQ(j["rows"].size(), 2u);
  EXPECT_DOUBLE_EQ(j["rows"][0]["eval"]["heldout_envs"]["after"]["success"].get<double>(), 0.25);
  EXPECT_TRUE(j["rows"][1]["valid_rate"].is_null());
  EXPECT_TRUE(j["rows"][1]["eval"].empty());
}

}  // namespace
}  // namespace spade::trainer
