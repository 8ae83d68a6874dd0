// `spade train` end to end on a tiny config (issue 2: "one train step on a tiny config"): corpus
// built from files, tokenizer trained, cold start, one self-play step with designer generation,
// validation, hints, play and the GRPO update; outputs written; the checkpoint loads and samples.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "tests/trainer/tiny_run.h"
#include "common/atomic_file.h"
#include "policy/checkpoint.h"
#include "policy/tokenizer.h"
#include "rollout/prompts.h"
#include "rollout/sampler.h"
#include "tests/trainer/spawn_helpers.h"
#include "trainer/train.h"

using namespace spade;
namespace fs = std::filesystem;

TEST(Train, TinyRunWritesEveryOutput) {
  const fs::path root = fs::path(SPADE_TEST_TMP) / "train_tiny";
  fs::remove_all(root);
  fs::create_directories(root);  // run.out_dir must exist (only the default runs/ is created)
  // train.peak_tflops set: perf/mfu is logged (tiny peak so the value is far from 0 on a CPU).
  const std::string yaml = fixtures::tiny_run_yaml(root.string(), /*threads=*/2, /*max_attempts=*/2) +
                           "train: {peak_tflops: 1.0e-6}\n";
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
    // perf/mfu (trainer/step_bench.h update_mfu, tested by hand in test_step_bench.cpp) is logged for
    // every step whose update took time (this tiny run's zero-variance groups may train nothing).
    EXPECT_EQ(j.contains("perf/mfu"), j["time/update_s"].get<double>() > 0) << line;
    EXPECT_EQ(j["step"], n + 1);  // the n-th step is step n, as in the console and checkpoint names
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

// A bad loss.kl_reference is found before any slow work: the reference policy is loaded right after
// the run directory is made, so the corpus is never built and the (here 10-minute) cold start never
// starts. Before, the error came only after the cold start.
TEST(Train, BadKlReferenceFailsBeforeTheCorpusAndTheColdStart) {
  const fs::path root = fs::path(SPADE_TEST_TMP) / "train_bad_kl_reference";
  fs::remove_all(root);
  fs::create_directories(root);
  const std::string missing = (root / "no_such_checkpoint").string();
  const std::string yaml = fixtures::tiny_run_yaml(root.string(), /*threads=*/1, /*max_attempts=*/1) +
                           "loss: {kl_coef: 0.005, kl_reference: " + missing + "}\n";
  trainer::Config config = trainer::parse_config(yaml, "bad_kl.yaml");
  config.warm_start.max_seconds = 600;
  config.warm_start.max_steps = 100000;
  try {
    trainer::run_train(config, {true}, [](const std::string&) {});
    FAIL() << "a missing loss.kl_reference must be an error";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find(missing), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(root / "t" / "corpus.jsonl"));
}

// The tool-use setting end to end (issue 21) on the tiny config: tool-use seeds, the tool-use
// designer prompt and gates with the self-validator on, seed fill-ins played as tool-use episodes
// (the agent's opening carries the program's tools, rendered by the chat template), tool-call metrics
// logged, rollouts.h5 with the token kinds.
TEST(Train, ToolUseRunPlaysToolUseEnvironments) {
  const fs::path root = fs::path(SPADE_TEST_TMP) / "train_tooluse";
  fs::remove_all(root);
  fs::create_directories(root);
  std::string yaml = fixtures::tiny_run_yaml(root.string(), /*threads=*/2, /*max_attempts=*/1,
                                             "setting: tool_use, self_validate: true, fill_with_seeds: true, ");
  for (const auto& [from, to] : std::vector<std::pair<std::string, std::string>>{
           {"/data/seed_envs}", "/data/tooluse_seed_envs}"}, {"context_tokens: 1536", "context_tokens: 4000"},
           {"num_key_value_heads: 1}", "num_key_value_heads: 1, max_position_embeddings: 4096}"}}) {
    ASSERT_NE(yaml.find(from), std::string::npos) << from;
    yaml.replace(yaml.find(from), from.size(), to);
  }
  trainer::Config config = trainer::parse_config(yaml, "tooluse.yaml");
  const std::string final_dir = trainer::run_train(config, {true}, [](const std::string&) {});
  const fs::path run = root / "t";
  // Every designer attempt of the random policy is rejected with its reason; the slots are filled
  // with tool-use seeds (2 regenerations x 2 slots x 1 attempt).
  int rejected = 0;
  for (auto& e : fs::directory_iterator(run / "rejected")) rejected += e.path().extension() == ".txt";
  EXPECT_EQ(rejected, 4);
  std::ifstream in(run / "metrics.jsonl");
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    const nlohmann::json j = nlohmann::json::parse(line);
    for (const char* key : {"agent/tool_calls_per_play", "agent/plays_with_tool_calls", "agent/malformed_tool_call_share",
                            "envs/from_seeds"})
      EXPECT_TRUE(j.contains(key)) << key << " missing in " << line;
    ++n;
  }
  EXPECT_EQ(n, 2);
  // The agent plays: tool-use skills, each opening with the tools block of the program it plays.
  const nlohmann::json h5 = testutil::read_rollouts_h5((run / "rollouts.h5").string(), (root / "read.json").string());
  const policy::Tokenizer tok = policy::Tokenizer::load((run / "tokenizer.model").string());
  int agent = 0;
  for (const nlohmann::json& e : h5["episodes"]) {
    if (e["role"] != "agent") continue;
    ++agent;
    EXPECT_TRUE(rollout::is_tooluse_skill(e["skill"].get<std::string>())) << e["skill"];
    const std::vector<int64_t> ids = e["tokens"].get<std::vector<int64_t>>();
    const std::string text = tok.decode(ids);
    EXPECT_NE(text.find("<tools>"), std::string::npos) << text.substr(0, 400);
    EXPECT_NE(text.find("\"type\": \"function\""), std::string::npos);
    EXPECT_EQ(e["token_kinds"].size(), ids.size());
  }
  EXPECT_GT(agent, 0);
  EXPECT_EQ(final_dir, (run / "checkpoints" / "step_000002").string());
}
