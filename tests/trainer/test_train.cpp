// `spade train` end to end on a tiny config (issue 2: "one train step on a tiny config"): corpus
// built from files, tokenizer trained, cold start, one self-play step with designer generation,
// validation, hints, play and the GRPO update; outputs written; the checkpoint loads and samples.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "common/atomic_file.h"
#include "policy/checkpoint.h"
#include "policy/tokenizer.h"
#include "rollout/sampler.h"
#include "tests/trainer/spawn_helpers.h"
#include "trainer/train.h"

using namespace spade;
namespace fs = std::filesystem;

TEST(Train, TinyRunWritesEveryOutput) {
  const fs::path root = fs::path(SPADE_TEST_TMP) / "train_tiny";
  fs::remove_all(root);
  // A small real corpus: this repository's own Python seed programs have module text; use the
  // stdlib's json package when present (real documentation), else the seed folder.
  const std::string corpus_src = fs::exists("/usr/lib/python3.11/json") ? "/usr/lib/python3.11/json"
                                                                         : std::string(SPADE_SOURCE_DIR) + "/data";
  const std::string yaml =
      "run: {name: t, out_dir: " + root.string() + ", seed: 5, threads: 2}\n"
      "corpus: {build_from: [" + corpus_src + "], max_words: 40, min_words: 5}\n"
      "tokenizer: {vocab_size: 500}\n"
      "model: {hidden_size: 32, intermediate_size: 64, num_hidden_layers: 1, num_attention_heads: 2, "
      "num_key_value_heads: 1}\n"
      "seed_envs: {dir: " + std::string(SPADE_SOURCE_DIR) + "/data/seed_envs}\n"
      "warm_start: {max_steps: 2, batch_tokens: 1024, demos_per_env: 1}\n"
      "selfplay: {steps: 2, k: 1, envs_per_regen: 2, skills_per_regen: 2, plays_per_env: 2, hint_plays: 1,\n"
      "           max_attempts: 2, max_turns: 2, context_tokens: 1536, hint_max_tokens: 8,\n"
      "           designer: {max_new_tokens: 24}, agent: {max_new_tokens: 6}}\n"
      "optim: {lr: 0.001}\n"
      "checkpoint: {every: 1, keep_last: 1}\n";
  trainer::Config config = trainer::parse_config(yaml, "tiny.yaml");
  std::vector<std::string> lines;
  const std::string final_dir = trainer::run_train(config, {true}, [&](const std::string& l) { lines.push_back(l); });

  const fs::path run = root / "t";
  EXPECT_TRUE(fs::exists(run / "config.yaml"));
  EXPECT_TRUE(fs::exists(run / "corpus.jsonl"));
  EXPECT_TRUE(fs::exists(run / "memory.json"));
  // metrics.jsonl: one line per step with the required keys (issue 2, outputs).
  std::ifstream in(run / "metrics.jsonl");
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    auto j = nlohmann::json::parse(line);
    for (const char* key : {"actor/pg_loss", "actor/pg_clipfrac", "actor/entropy", "actor/grad_norm", "train/tis",
                            "reward/mean", "designer/valid_rate", "designer/regret", "designer/blend",
                            "perf/tokens_per_s", "perf/max_rss_gb", "time/step_s"})
      EXPECT_TRUE(j.contains(key)) << key << " missing in " << line;
    EXPECT_EQ(j["step"], n);
    ++n;
  }
  EXPECT_EQ(n, 2);
  // TensorBoard: one events file under tb/ with the same metric names, read back independently;
  // perf/max_rss_gb (VmHWM) is logged.
  std::vector<fs::path> events;
  for (auto& e : fs::directory_iterator(run / "tb")) events.push_back(e.path());
  ASSERT_EQ(events.size(), 1u);
  const nlohmann::json tb = testutil::read_tfevents(events[0].string(), (root / "tb.json").string());
  for (const char* key : {"actor/pg_loss", "reward/mean", "designer/valid_rate", "perf/max_rss_gb"}) {
    ASSERT_TRUE(tb["scalars"].contains(key)) << key;
    EXPECT_EQ(tb["scalars"][key].size(), 2u) << key;
  }
  EXPECT_GT(tb["scalars"]["perf/max_rss_gb"][1][1].get<double>(), 0.01);
  // A random 1-layer model writes no valid program: every attempt is rejected with a readable reason.
  int rejected = 0;
  for (auto& e : fs::directory_iterator(run / "rejected")) {
    if (e.path().extension() != ".txt") continue;
    ++rejected;
    EXPECT_FALSE(read_file(e.path().string()).empty());
  }
  EXPECT_EQ(rejected, 2 * 2 * 2);  // 2 regenerations x 2 slots x 2 attempts
  // Only the newest checkpoint is kept; it loads and samples.
  EXPECT_EQ(final_dir, (run / "checkpoints" / "step_000002").string());
  EXPECT_FALSE(fs::exists(run / "checkpoints" / "step_000001"));
  policy::Transformer model = policy::load_checkpoint(final_dir);
  policy::Tokenizer tok = policy::Tokenizer::load(final_dir + "/tokenizer.model");
  rollout::SamplingParams sp;
  sp.max_new_tokens = 5;
  auto out = rollout::generate(model, {tok.encode("def reset")}, sp, 0, 1);
  EXPECT_EQ(out[0].tokens.size(), 5u);
  EXPECT_NE(lines.back().find("final checkpoint"), std::string::npos);
}
