// Exact resume (issue 5): a deterministic tiny CPU run of the real `spade` binary is killed with
// SIGKILL in the middle of a step, resumed with `spade train --resume`, and its metrics.jsonl (minus
// time/ and perf/ keys) and final weights equal those of an uninterrupted run with the same seed.
// The processes are started with posix_spawn (never fork a process that runs LibTorch threads).
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "tests/trainer/tiny_run.h"
#include "common/atomic_file.h"
#include "tests/testing/tiny_policy.h"
#include "tests/trainer/spawn_helpers.h"
#include "trainer/corpus.h"

using namespace spade;
namespace fs = std::filesystem;

namespace {

pid_t spawn_spade(const std::vector<std::string>& args, const std::string& log_path) {
  std::vector<std::string> all = {SPADE_BIN};
  all.insert(all.end(), args.begin(), args.end());
  return testutil::spawn_logged(all, log_path);
}
using testutil::wait_exit;

}  // namespace

TEST(Resume, KilledMidStepThenResumedEqualsUninterrupted) {
  const fs::path root = fs::path(SPADE_TEST_TMP) / "resume_kill";
  fs::remove_all(root);
  fs::create_directories(root);
  // Shared inputs built once here, so both runs read the same corpus and tokenizer.
  trainer::build_corpus({fixtures::tiny_corpus_source()}, (root / "corpus.jsonl").string(), 40, 5);
  const std::string tokenizer = fixtures::tiny_tokenizer_path();
  // k = 3, checkpoint every 2 of 6 steps: the resumed checkpoint (step 2) falls inside a generation's
  // window, so live environments and their window rewards must be restored; fill_with_seeds admits
  // seed environments into the empty slots of the policy. The seeds are the coin game under every
  // skill (fixtures/coin_game.py: won or lost by the reset seed), and a short cold start teaches the
  // agent to answer with an end of turn, so plays of one environment get different rewards: the
  // policy-gradient term is live, not only the entropy bonus. Two PPO mini-batches per rollout: the
  // second step's old logprobs come from the weights before the first.
  const fs::path seeds = root / "seeds";
  const std::string coin = read_file(std::string(SPADE_SOURCE_DIR) + "/tests/trainer/fixtures/coin_game.py");
  for (const char* skill : {"math", "logic", "spatial", "pattern", "optimization", "causal"}) {
    fs::create_directories(seeds / skill);
    write_file_atomic((seeds / skill / "coin.py").string(), coin);
  }
  std::string model_yaml = fixtures::tiny_model_yaml();  // its seed_envs line points at the coin seeds
  const std::string repo_seeds = std::string(SPADE_SOURCE_DIR) + "/data/seed_envs";
  model_yaml.replace(model_yaml.find(repo_seeds), repo_seeds.size(), seeds.string());
  const std::string yaml =
      "run: {out_dir: " + root.string() + ", seed: 11, deterministic: true}\n"
      "corpus: {path: " + (root / "corpus.jsonl").string() + ", max_words: 40}\n"
      "tokenizer: {path: " + tokenizer + "}\n"
      + model_yaml +
      "warm_start: {max_steps: 40, max_seconds: 1.0e6, batch_tokens: 512, demos_per_env: 2, designer_fraction: 0.2,"
      " hint_fraction: 0, lr: 0.01}\n"
      "selfplay: {steps: 10, k: 3, envs_per_regen: 2, skills_per_regen: 2, plays_per_env: 2, hint_plays: 1,\n"
      "           max_attempts: 1, max_turns: 2, context_tokens: 1024,\n"
      "           fill_with_seeds: true, designer: {max_new_tokens: 16}, agent: {max_new_tokens: 12},\n"
      "           hint: {max_new_tokens: 8}}\n"
      "loss: {entropy_coef: 0.01}\n"  // a random policy earns no reward: the entropy bonus moves the weights
      "optim: {lr: 0.001, mini_batches: 2}\n"
      "checkpoint: {every: 2, keep_last: 2}\n";
  write_file_atomic((root / "tiny.yaml").string(), yaml);
  const std::string cfg = (root / "tiny.yaml").string();

  const auto t0 = std::chrono::steady_clock::now();
  const pid_t ref = spawn_spade({"train", "--config", cfg, "--name", "ref"}, (root / "ref.log").string());
  const pid_t victim = spawn_spade({"train", "--config", cfg, "--name", "killed"}, (root / "killed.log").string());
  ASSERT_GT(ref, 0);
  ASSERT_GT(victim, 0);

  // Kill the victim as soon as step 2 is logged: it is then inside step 3 or a little later (under
  // load), always between two checkpoints and well before step 10, so the resume starts from a
  // checkpoint inside a generation's window.
  const fs::path victim_metrics = root / "killed" / "metrics.jsonl";
  bool killed = false;
  while (!killed) {
    int status = 0;
    ASSERT_EQ(waitpid(victim, &status, WNOHANG), 0) << "the run ended before it was killed:\n"
                                                     << read_file((root / "killed.log").string());
    if (testutil::count_lines(victim_metrics) >= 3) {
      ASSERT_EQ(kill(victim, SIGKILL), 0);
      killed = true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(wait_exit(victim), 128 + SIGKILL);
  const int lines_at_kill = testutil::count_lines(victim_metrics);
  EXPECT_GE(lines_at_kill, 3);
  EXPECT_LT(lines_at_kill, 10) << "the kill landed after the run had finished";

  const pid_t resumed =
      spawn_spade({"train", "--resume", (root / "killed").string()}, (root / "resumed.log").string());
  ASSERT_GT(resumed, 0);
  ASSERT_EQ(wait_exit(ref), 0) << read_file((root / "ref.log").string());
  ASSERT_EQ(wait_exit(resumed), 0) << read_file((root / "resumed.log").string());
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_NE(read_file((root / "resumed.log").string()).find("resume: continuing at step"), std::string::npos);

  const std::vector<nlohmann::json> a = testutil::comparable_metrics(root / "ref" / "metrics.jsonl");
  const std::vector<nlohmann::json> b = testutil::comparable_metrics(root / "killed" / "metrics.jsonl");
  ASSERT_EQ(a.size(), 10u);
  ASSERT_EQ(b.size(), 10u);
  for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i], b[i]) << "step " << i;
  EXPECT_GT(a[3]["envs/live"].get<double>(), 0.0) << "the test should play seed environments";
  EXPECT_GT(a[4]["actor/grad_norm"].get<double>(), 0.0) << "the weights should move between checkpoints";
  int live_pg = 0;  // steps whose policy-gradient term is nonzero (some environment had a win and a loss)
  for (const nlohmann::json& m : a) {
    live_pg += m["actor/pg_loss"].get<double>() != 0.0;
    EXPECT_EQ(m["actor/optimizer_steps"].get<double>(), 2.0);
  }
  EXPECT_GE(live_pg, 3) << "the agent should win some plays and lose others";

  // Final weights and trainer state are bit-identical; keep-last-2 leaves steps 8 and 10.
  const std::string fa = (root / "ref/checkpoints/step_000010").string();
  const std::string fb = (root / "killed/checkpoints/step_000010").string();
  EXPECT_EQ(read_file(fa + "/model.safetensors"), read_file(fb + "/model.safetensors"));
  auto state = [](const std::string& d) {
    nlohmann::json j = nlohmann::json::parse(read_file(d + "/trainer_state/state.json"));
    j["summary"].erase("seconds");
    return j;
  };
  EXPECT_EQ(state(fa), state(fb));
  // rollouts.h5: cut back to step 2 on resume, then appended: the same rows as the uninterrupted run.
  const nlohmann::json ra = testutil::read_rollouts_h5((root / "ref/rollouts.h5").string(), (root / "ra.json").string());
  const nlohmann::json rb =
      testutil::read_rollouts_h5((root / "killed/rollouts.h5").string(), (root / "rb.json").string());
  EXPECT_GT(ra["episodes"].size(), 0u);
  EXPECT_EQ(ra, rb);
  EXPECT_FALSE(fs::exists(root / "killed/checkpoints/step_000002"));
  EXPECT_TRUE(fs::exists(root / "killed/checkpoints/step_000010/trainer_state/optimizer.pt"));
  RecordProperty("seconds", std::to_string(seconds));
}
