// trainer/run_report.h: run directories read back, and the Markdown table (the Wilson interval is
// tested in tests/common/test_stats.cpp). (The page itself is loaded in Chromium by tests/apps/test_report_cli.cpp.)
#include <gtest/gtest.h>

#include <filesystem>

#include "common/atomic_file.h"
#include "common/error.h"
#include "common/stats.h"
#include "trainer/run_report.h"

namespace spade::trainer {
namespace {

namespace fs = std::filesystem;

TEST(RunReport, ReadsARunAndNamesABadLine) {
  const fs::path d = fs::path(SPADE_TEST_TMP) / "run_report" / "games-a";
  fs::remove_all(d.parent_path());
  fs::create_directories(d);
  write_file_atomic((d / "metrics.jsonl").string(), "{\"step\": 1, \"reward/mean\": 0.5}\n{\"step\": 2}\n");
  write_file_atomic((d / "summary.json").string(),
                    R"({"wall_seconds": 486, "selfplay": {"attempts": 12, "admitted": 10, "hint_plays": 48,
                        "hint_success": 0.0833333, "nohint_plays": 263, "nohint_success": 0.3079848,
                        "rejected_by_reason": {"timeout": 2}}})");
  write_file_atomic((d / "config.yaml").string(), "run: {name: games-tiny}\n");
  RunMetrics r = load_run_metrics(d.string());
  EXPECT_EQ(r.name, "games-a (games-tiny)");
  ASSERT_EQ(r.steps.size(), 2u);
  EXPECT_EQ(r.steps[0]["reward/mean"], 0.5);
  // 0.3079848 x 263 = 81 successes: Newcombe's 81/263 interval; 4/48 by the same formula.
  const std::string md = runs_report_markdown({r});
  EXPECT_NE(md.find("| games-a (games-tiny) | 2 | 486 s | 10 of 12 admitted | timeout 2 |"), std::string::npos) << md;
  EXPECT_NE(md.find("0.308 [0.255, 0.366] (263 plays)"), std::string::npos) << md;
  const auto [lo, hi] = wilson_interval(4, 48);
  char want[96];
  std::snprintf(want, sizeof want, "0.083 [%.3f, %.3f] (48 plays)", lo, hi);
  EXPECT_NE(md.find(want), std::string::npos) << md;

  write_file_atomic((d / "metrics.jsonl").string(), "{\"step\": 1}\n[1, 2]\n");
  try {
    load_run_metrics(d.string());
    FAIL() << "a line that is not a step record was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("metrics.jsonl:2: expected a JSON object with a numeric \"step\""), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(load_run_metrics((d.parent_path() / "missing").string()), Error);
}

// `spade duel watch` writes duel/metrics.jsonl, a line per scored checkpoint at the checkpoint's step:
// its keys join that step's record (or one of their own past the last logged step), in step order, and
// the page draws duel/bt with its interval band.
TEST(RunReport, DuelMetricsJoinTheStepOfTheirCheckpoint) {
  const fs::path d = fs::path(SPADE_TEST_TMP) / "run_report_duel" / "r";
  fs::remove_all(d.parent_path());
  fs::create_directories(d / "duel");
  write_file_atomic((d / "metrics.jsonl").string(), "{\"step\": 1, \"reward/mean\": 0.5}\n{\"step\": 2}\n");
  RunMetrics plain = load_run_metrics(d.string());
  EXPECT_EQ(runs_report_html({plain}).find("data-metric=\"duel/bt\""), std::string::npos);
  write_file_atomic((d / "duel" / "metrics.jsonl").string(),
                    "{\"step\": 2, \"duel/bt\": 0.25, \"duel/bt_ci_low\": -1, \"duel/bt_ci_high\": 1.5}\n"
                    "{\"step\": 4, \"duel/bt\": -0.5}\n");
  RunMetrics r = load_run_metrics(d.string());
  ASSERT_EQ(r.steps.size(), 3u);
  EXPECT_EQ(r.steps[0]["reward/mean"], 0.5);
  EXPECT_EQ(r.steps[1]["step"], 2);
  EXPECT_EQ(r.steps[1]["duel/bt"], 0.25);
  EXPECT_EQ(r.steps[2]["step"], 4);
  EXPECT_EQ(r.steps[2]["duel/bt"], -0.5);
  EXPECT_NE(runs_report_html({r}).find("data-metric=\"duel/bt\""), std::string::npos);
  write_file_atomic((d / "duel" / "metrics.jsonl").string(), "{\"bt\": 1}\n");
  try {
    load_run_metrics(d.string());
    FAIL() << "a duel line without a step was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("duel/metrics.jsonl:1: expected a JSON object with a numeric \"step\""),
              std::string::npos)
        << e.what();
  }
}

// A run with in-loop evaluation logs a step-0 line (the eval before self-play): 2 steps, not 3 lines.
TEST(RunReport, TheStepZeroEvalLineIsNoStep) {
  RunMetrics r;
  r.name = "evaluated";
  r.steps = {nlohmann::json{{"step", 0}, {"eval/heldout_envs/success", 0.1}}, nlohmann::json{{"step", 1}},
             nlohmann::json{{"step", 2}}};
  const std::string md = runs_report_markdown({r});
  EXPECT_NE(md.find("| evaluated | 2 |"), std::string::npos) << md;
}


// Each eval set's overall chart comes before its per-skill charts (a set's name sorts after its skills'
// keys alphabetically: "eval/s/math/success" < "eval/s/success").
TEST(RunReport, EachSetsOverallEvalChartPrecedesItsSkills) {
  RunMetrics r;
  r.name = "evaluated";
  r.steps = {nlohmann::json{{"step", 0}, {"eval/s/success", 0.1}, {"eval/s/math/success", 0.2}, {"eval/t/success", 0.3}}};
  const std::string html = runs_report_html({r});
  const size_t overall = html.find("eval/s/success"), skill = html.find("eval/s/math/success"),
               next_set = html.find("eval/t/success");
  ASSERT_NE(overall, std::string::npos);
  ASSERT_NE(skill, std::string::npos);
  EXPECT_LT(overall, skill);
  EXPECT_LT(skill, next_set);
}

}  // namespace
}  // namespace spade::trainer
