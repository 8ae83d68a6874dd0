// trainer/env_pool.h and selfplay.mode fixed_pool: the draws, and a tiny run in which nothing is
// designed: no designer attempt, no envs/ or rejected/ file, every live environment a pool program,
// whose diversity is still measured (trainer/generation_stats.h) and whose rollouts.h5 rows carry a
// win rate and no regret.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "common/code_ngrams.h"
#include "common/error.h"
#include "common/vendi.h"
#include "tests/trainer/spawn_helpers.h"
#include "tests/trainer/tiny_run.h"
#include "trainer/config.h"
#include "trainer/env_pool.h"
#include "trainer/train.h"

namespace spade::trainer {
namespace {

namespace fs = std::filesystem;

TEST(EnvPool, DrawsAreDistinctWithoutReplacementAndCoverALargerGeneration) {
  std::mt19937_64 rng(3);
  const std::vector<size_t> a = draw_pool(10, 6, false, rng);
  EXPECT_EQ(std::set<size_t>(a.begin(), a.end()).size(), 6u);
  // 7 draws from a pool of 3: the whole pool twice (each of the first 3 and next 3 a permutation), then 1.
  const std::vector<size_t> b = draw_pool(3, 7, false, rng);
  ASSERT_EQ(b.size(), 7u);
  EXPECT_EQ(std::set<size_t>(b.begin(), b.begin() + 3).size(), 3u);
  EXPECT_EQ(std::set<size_t>(b.begin() + 3, b.begin() + 6).size(), 3u);
  const std::vector<size_t> c = draw_pool(4, 50, true, rng);
  for (size_t i : c) EXPECT_LT(i, 4u);
  EXPECT_LT(std::set<size_t>(c.begin(), c.end()).size(), 50u);  // with replacement: repeats
  std::mt19937_64 r1(9), r2(9);
  EXPECT_EQ(draw_pool(20, 5, false, r1), draw_pool(20, 5, false, r2));
  EXPECT_THROW(draw_pool(0, 1, false, rng), Error);
  EXPECT_EQ(parse_selfplay_mode("fixed_pool"), SelfPlayMode::kFixedPool);
  EXPECT_THROW(parse_selfplay_mode("fixed"), Error);
}

size_t files_in(const fs::path& d) {
  if (!fs::exists(d)) return 0;
  return static_cast<size_t>(std::distance(fs::directory_iterator(d), fs::directory_iterator()));
}

TEST(EnvPool, FixedPoolRunMakesNoDesignerCall) {
  const fs::path root = fs::path(SPADE_TEST_TMP) / "fixed_pool_run";
  fs::remove_all(root);
  fs::create_directories(root);
  Config config = parse_config(fixtures::tiny_run_yaml(root.string(), 1, 2, "mode: fixed_pool, "), "pool.yaml");
  std::vector<std::string> lines;
  run_train(config, {true}, [&](const std::string& l) { lines.push_back(l); });
  const fs::path run = root / "t";
  EXPECT_EQ(files_in(run / "envs"), 0u) << "nothing designed, nothing saved";
  EXPECT_EQ(files_in(run / "rejected"), 0u);
  const nlohmann::json summary = nlohmann::json::parse(std::ifstream(run / "summary.json"));
  EXPECT_EQ(summary["selfplay"]["attempts"], 0) << summary.dump();
  // rollouts.h5: k = 1 and 2 steps, so each step's draw of 2 lives one step, and both generations
  // close at step 2 (the first replaced there, the second at the run's end): 4 rows, no hint so no
  // regret, and a win rate over the generation's 2 no-hint plays.
  const nlohmann::json h5 = testutil::read_rollouts_h5((run / "rollouts.h5").string(), (root / "h5.json").string());
  ASSERT_EQ(h5["environments"].size(), 4u) << h5["environments"].dump();
  std::map<int, std::vector<std::string>> sources;  // born -> the draw's programs
  for (const nlohmann::json& e : h5["environments"]) {
    EXPECT_EQ(e["closed"], 2);
    EXPECT_EQ(e["from_seed"], 1);
    EXPECT_TRUE(e["regret"].is_null()) << e["id"];
    EXPECT_EQ(e["window_plays"], 2);
    double wins = 0;
    int plays = 0;
    for (const nlohmann::json& ep : h5["episodes"])
      if (ep["env_id"] == e["id"] && ep["role"] == "agent" && ep["hinted"] == 0) {
        wins += ep["reward"].get<double>() > 0;
        ++plays;
      }
    EXPECT_EQ(plays, 2) << e["id"];
    EXPECT_EQ(e["win_rate"].get<double>(), wins / 2) << e["id"];
    sources[e["born"].get<int>()].push_back(e["source"]);
  }
  std::ifstream in(run / "metrics.jsonl");
  int steps = 0;
  for (std::string l; std::getline(in, l); ++steps) {
    const nlohmann::json m = nlohmann::json::parse(l);
    EXPECT_EQ(m["envs/live"], 2) << l;  // envs_per_regen of the tiny config, all from the pool
    EXPECT_EQ(m.value("designer/trained_samples", 0.0), 0.0) << l;
    EXPECT_EQ(m.value("designer/blend", -1.0), 0.0) << l;  // no designer reward in a fixed pool
    // The draw's diversity over both drawn programs (the math is tested by hand in test_vendi.cpp).
    const std::vector<std::string>& drawn = sources[m["step"].get<int>()];
    ASSERT_EQ(drawn.size(), 2u) << l;
    EXPECT_NEAR(m.value("designer/vendi_score", -1.0), vendi_score(code_similarity_matrix(drawn), 2), 1e-12) << l;
    EXPECT_TRUE(m.contains("designer/formula_in_first_obs")) << l;
  }
  EXPECT_EQ(steps, 2);
}

}  // namespace
}  // namespace spade::trainer
