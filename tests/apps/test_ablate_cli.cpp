// `spade ablate` end to end with the real binary on the tiny config of tests/trainer/tiny_run.h (seconds
// per run): the base and one overlay trained on the same seed, each evaluated before and after on the
// two held-out sets the command adds, the table and the report written; a second call keeps both runs;
// --print gives one launch line per variant and the --collect line. And every overlay of
// configs/ablations/ passes `spade train --dry-run` over the embedded default.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "common/atomic_file.h"
#include "tests/testing/test_util.h"
#include "tests/testing/tree_snapshot.h"
#include "tests/trainer/spawn_helpers.h"
#include "tests/trainer/tiny_run.h"

namespace fs = std::filesystem;
using nlohmann::json;
using spade::fixtures::CommandResult;

namespace {

CommandResult spade_cmd(const std::string& args) {
  return spade::fixtures::run_command(std::string("OMP_WAIT_POLICY=PASSIVE ") + SPADE_BIN + " " + args + " 2>&1");
}

bool has(const CommandResult& r, const std::string& text) { return r.out.find(text) != std::string::npos; }

const std::string kOverlay = std::string(SPADE_SOURCE_DIR) + "/configs/ablations/no_designer_training.yaml";

}  // namespace

TEST(AblateCli, TrainsBaseAndVariantEvaluatesBeforeAfterAndWritesTheTable) {
  const std::string d = spade::fixtures::fresh_test_dir("ablate_cli", "two_runs");
  const std::string cfg = d + "/tiny.yaml";
  spade::write_file_atomic(cfg, spade::fixtures::tiny_run_yaml(d, /*threads=*/1, /*max_attempts=*/1));
  const std::string args = "ablate --base " + cfg + " --variants " + kOverlay + " --set eval.plays=1 --out " + d + "/cmp";
  CommandResult r = spade_cmd(args);
  ASSERT_EQ(r.rc, 0) << r.out;
  // Runs named <run.name>-<variant> (run.name t of the tiny config), both finished.
  for (const char* run : {"t-base", "t-no_designer_training"}) {
    const json summary = json::parse(spade::read_file(d + "/" + run + "/summary.json"));
    EXPECT_EQ(summary["finished"], true) << run;
  }
  // The overlay reached only its run: the saved configs differ in selfplay.designer_train.
  EXPECT_NE(spade::read_file(d + "/t-base/config.yaml").find("designer_train: true"), std::string::npos);
  EXPECT_NE(spade::read_file(d + "/t-no_designer_training/config.yaml").find("designer_train: false"), std::string::npos);

  const json table = json::parse(spade::read_file(d + "/cmp/ablation.json"));
  ASSERT_EQ(table["rows"].size(), 2u);
  EXPECT_EQ(table["rows"][0]["variant"], "base");
  EXPECT_EQ(table["rows"][1]["variant"], "no_designer_training");
  for (const json& row : table["rows"]) {
    EXPECT_EQ(row["steps"], 2) << row;  // selfplay.steps of the tiny config
    // The tiny config has no eval section: ablate adds the held-out games and held-out seeds of the seed games.
    for (const char* set : {"heldout_envs", "seed_envs"}) {
      ASSERT_TRUE(row["eval"].contains(set)) << row;
      const json& e = row["eval"][set];
      ASSERT_TRUE(e["before"].is_object() && e["after"].is_object()) << row;
      EXPECT_EQ(e["after_step"], 2) << row;
      for (const char* when : {"before", "after"}) {
        EXPECT_LE(e[when]["low"].get<double>(), e[when]["success"].get<double>());
        EXPECT_GE(e[when]["high"].get<double>(), e[when]["success"].get<double>());
      }
    }
    EXPECT_GT(row["wall_s"].get<double>(), 0) << row;
  }
  const std::string md = spade::read_file(d + "/cmp/ablation.md");
  EXPECT_NE(md.find("| no_designer_training | t-no_designer_training | 2 |"), std::string::npos) << md;
  const std::string html = spade::read_file(d + "/cmp/report.html");
  EXPECT_NE(html.find("t-no_designer_training"), std::string::npos);

  // Again: both runs complete, kept untouched; the table is rewritten.
  const auto before = spade::fixtures::tree_snapshot(d + "/t-base");
  r = spade_cmd(args);
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_TRUE(has(r, "[base] complete in " + d + "/t-base: kept")) << r.out;
  EXPECT_TRUE(has(r, "[no_designer_training] complete in " + d + "/t-no_designer_training: kept")) << r.out;
  EXPECT_EQ(spade::fixtures::tree_snapshot(d + "/t-base"), before);
}

TEST(AblateCli, PrintGivesOneLaunchLinePerVariantAndTheCollectLine) {
  const CommandResult r = spade_cmd("ablate --variants " + kOverlay + " --print --launcher torchrun --nproc 8");
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_TRUE(has(r, "torchrun --no-python --nproc-per-node 8 spade train --set run.name=games-tiny-base")) << r.out;
  EXPECT_TRUE(has(r, "torchrun --no-python --nproc-per-node 8 spade train --overlay " + kOverlay +
                         " --set run.name=games-tiny-no_designer_training"))
      << r.out;
  EXPECT_TRUE(has(r, "spade ablate --variants " + kOverlay + " --collect")) << r.out;
  // --collect before any run: the missing run is named.
  const CommandResult c = spade_cmd("ablate --variants " + kOverlay + " --collect --set run.out_dir=/nonexistent");
  EXPECT_EQ(c.rc, 1) << c.out;
  EXPECT_TRUE(has(c, "ablate --collect: variant base: no run at /nonexistent/games-tiny-base")) << c.out;
  // An --out folder holding something else: refused before any training, nothing created.
  const std::string d = spade::fixtures::fresh_test_dir("ablate_cli", "busy_out");
  spade::write_file_atomic(d + "/notes.txt", "mine\n");
  const CommandResult busy = spade_cmd("ablate --variants " + kOverlay + " --set run.out_dir=" + d + " --out " + d);
  EXPECT_EQ(busy.rc, 1) << busy.out;
  EXPECT_TRUE(has(busy, "ablate --out")) << busy.out;
  EXPECT_FALSE(has(busy, "training")) << busy.out;
  EXPECT_FALSE(fs::exists(d + "/games-tiny-base"));
}

TEST(AblateCli, EveryOverlayPassesTheDryRunOverTheDefault) {
  int overlays = 0;
  for (const auto& e : fs::directory_iterator(std::string(SPADE_SOURCE_DIR) + "/configs/ablations")) {
    if (e.path().extension() != ".yaml") continue;
    ++overlays;
    const CommandResult r = spade_cmd("train --overlay " + e.path().string() + " --dry-run");
    EXPECT_EQ(r.rc, 0) << e.path() << "\n" << r.out;
    EXPECT_TRUE(has(r, "config configs/games-tiny.yaml (embedded): ok")) << r.out;
  }
  EXPECT_EQ(overlays, 9);  // the nine controls of issue 19
}
