// Trainer-state checkpoints (issue 5): the loop state round-trips exactly through JSON, and a saved
// checkpoint restores optimizer, torch RNG, memory and weights (fp32 and bf16 HF weights) so that the
// next optimizer step is bit-identical.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <filesystem>
#include <random>
#include <sstream>

#include "common/error.h"
#include "policy/checkpoint.h"
#include "policy/safetensors.h"
#include "tests/testing/tiny_policy.h"
#include "trainer/checkpointing.h"
#include "trainer/grpo_update.h"
#include "trainer/selfplay_state.h"

using namespace spade;
using namespace spade::trainer;
namespace fs = std::filesystem;

namespace {

rollout::Sample designer_sample() {
  rollout::Sample s;
  s.role = rollout::Role::Designer;
  s.append_context({5, 6, 7});
  s.append_sampled({8, 9, 10, 11}, {-1.2345678f, -0.1f, -3.3333333f, -1e-7f});
  s.reward = 0.123456789012345;
  s.advantage = -31.999999999;
  s.env_id = "game_00003_001_logic";
  s.skill = "logic";
  s.rollout_id = 3;
  s.temperature = 0.6;
  return s;
}

SelfPlayState example_state() {
  SelfPlayState s;
  s.next_step = 5;
  std::mt19937_64 rng(77);
  rng.discard(1234);
  std::ostringstream o;
  o << rng;
  s.rng = o.str();
  s.corpus_position = 42;
  LiveEnv e;
  e.id = "game_00003_001_logic";
  e.skill = "logic";
  e.code = "class AEnv:\n  pass\n\"quoted\" \\ unicode \xc3\xa9";
  e.path = "/runs/x/envs/game_00003_001_logic.py";
  e.hint = "try 7";
  e.born = 3;
  e.r_hint = 0.75;
  e.r_nohint = 1.0 / 3.0;
  e.regret = 0.75 - 1.0 / 3.0;
  e.window_rewards = {0.1, 1.0, 0.0, 2.0 / 3.0};
  e.step_timeout = true;
  s.live.push_back(e);
  e.from_seed = true;
  e.id = "seed_00003_002_logic_x";
  s.live.push_back(e);
  s.designer_buffer.push_back(designer_sample());
  s.skill_ema["logic"] = {true, 0.3141592653589793, 0.2718281828459045};
  s.summary.steps = 5;
  s.summary.attempts = 10;
  s.summary.rejected_by_reason["smoke_test"] = 4;
  s.summary.hint_success_sum = 1.5;
  s.last_valid_rate = 0.2;
  s.last_regret = -0.0625;
  s.lr = 1e-6;
  return s;
}

void expect_same_sample(const rollout::Sample& a, const rollout::Sample& b) {
  EXPECT_EQ(a.role, b.role);
  EXPECT_EQ(a.tokens, b.tokens);
  EXPECT_EQ(a.loss_mask, b.loss_mask);
  EXPECT_EQ(a.rollout_logprobs, b.rollout_logprobs);  // bitwise: exact round trip
  EXPECT_EQ(a.reward, b.reward);
  EXPECT_EQ(a.advantage, b.advantage);
  EXPECT_EQ(a.env_id, b.env_id);
  EXPECT_EQ(a.skill, b.skill);
  EXPECT_EQ(a.rollout_id, b.rollout_id);
  EXPECT_EQ(a.temperature, b.temperature);
}

}  // namespace

TEST(TrainerState, JsonRoundTripIsExact) {
  const SelfPlayState s = example_state();
  const SelfPlayState r = state_from_json(nlohmann::json::parse(state_to_json(s).dump()));
  EXPECT_EQ(r.next_step, s.next_step);
  EXPECT_EQ(r.rng, s.rng);
  std::mt19937_64 a, b(77);
  b.discard(1234);
  std::istringstream(r.rng) >> a;
  EXPECT_EQ(a(), b());
  EXPECT_EQ(r.corpus_position, 42u);
  ASSERT_EQ(r.live.size(), 2u);
  EXPECT_EQ(r.live[0].code, s.live[0].code);
  EXPECT_EQ(r.live[0].window_rewards, s.live[0].window_rewards);
  EXPECT_EQ(r.live[0].r_nohint, s.live[0].r_nohint);
  EXPECT_EQ(r.live[0].regret, s.live[0].regret);
  EXPECT_TRUE(r.live[0].step_timeout);
  EXPECT_FALSE(r.live[0].from_seed);
  EXPECT_TRUE(r.live[1].from_seed);
  ASSERT_EQ(r.designer_buffer.size(), 1u);
  expect_same_sample(r.designer_buffer[0], s.designer_buffer[0]);
  EXPECT_EQ(r.skill_ema.at("logic").mu_fast, 0.3141592653589793);
  EXPECT_EQ(r.skill_ema.at("logic").mu_slow, 0.2718281828459045);
  EXPECT_EQ(r.summary.rejected_by_reason.at("smoke_test"), 4);
  EXPECT_EQ(r.summary.hint_success_sum, 1.5);
  EXPECT_EQ(r.last_regret, -0.0625);
  EXPECT_EQ(r.lr, 1e-6);
}

TEST(TrainerState, MalformedStateNamesTheProblem) {
  nlohmann::json j = state_to_json(example_state());
  j["designer_buffer"][0]["loss_mask"].push_back(1);
  EXPECT_THROW(state_from_json(j), Error);
  j = state_to_json(example_state());
  j["format"] = "other";
  EXPECT_THROW(state_from_json(j), Error);
}

// Save after one optimizer step, take a second step; restore into fresh objects, take the second step
// again: weights, optimizer moments and torch RNG draws are bit-identical. bf16 HF weights keep an fp32
// copy in trainer_state/, so the restore is exact in both dtypes.
TEST(TrainerState, CheckpointRestoresTheNextStepExactly) {
  for (const std::string dtype : {"fp32", "bf16"}) {
    const fs::path root = fs::path(SPADE_TEST_TMP) / ("ckpt_state_" + dtype);
    fs::remove_all(root);
    const RunDir run = RunDir::create(root.string(), "r");
    fixtures::TinyPolicy p = fixtures::make_tiny_policy(3);
    torch::optim::AdamW opt(p.model->parameters(), torch::optim::AdamWOptions(1e-2).weight_decay(0.1));
    std::vector<rollout::Sample> batch;
    for (int i = 0; i < 3; ++i) {
      rollout::Sample s = designer_sample();
      s.advantage = i - 1.0;
      s.tokens[4] += i;
      batch.push_back(s);
    }
    UpdateOptions u;
    grpo_update(p.model, opt, batch, u);
    EnvMemory memory(10, 0.15, 0.85);
    memory.add({"a.py", "logic", "code", 0.5, 0.25, 1});
    const SelfPlayState state = example_state();
    torch::manual_seed(99);
    const TrainerStateRefs refs{state, opt, memory};
    const std::string dir = save_training_checkpoint(run, 1, p.ref(), dtype, &refs);
    EXPECT_EQ(dir, run.checkpoint_dir(1));
    EXPECT_TRUE(fs::exists(dir + "/model.safetensors"));
    EXPECT_EQ(fs::exists(dir + "/trainer_state/model_fp32.safetensors"), dtype == "bf16");
    const torch::Tensor draw = torch::rand({4});
    grpo_update(p.model, opt, batch, u);

    // A stale stage directory from an interrupted save is cleaned and never chosen.
    fs::create_directories(run.checkpoints_dir() + "/.stage_step_000009/trainer_state");
    fs::create_directories(run.checkpoints_dir() + "/step_000009.tmp");
    EXPECT_EQ(latest_resumable_checkpoint(run), dir);
    EXPECT_FALSE(fs::exists(run.checkpoints_dir() + "/.stage_step_000009"));

    torch::manual_seed(1);  // scrambled; restored from the checkpoint below
    policy::Transformer model = load_training_policy(dir);
    if (dtype == "bf16") {
      // A checkpoint of an earlier version keeps its fp32 weights as a torch archive, model_fp32.pt:
      // loaded over the bf16 HF weights as before (they differ from the bf16 values somewhere).
      const std::string legacy = (root / "legacy").string();
      fs::copy(dir, legacy, fs::copy_options::recursive);
      fs::remove(legacy + "/trainer_state/model_fp32.safetensors");
      torch::save(model, legacy + "/trainer_state/model_fp32.pt");
      policy::Transformer old = load_training_policy(legacy), rounded = policy::load_checkpoint(legacy);
      bool beyond_bf16 = false;
      for (const auto& kv : model->named_parameters()) {
        EXPECT_TRUE(torch::equal(kv.value(), old->named_parameters()[kv.key()])) << kv.key();
        beyond_bf16 = beyond_bf16 || !torch::equal(kv.value(), rounded->named_parameters()[kv.key()]);
      }
      EXPECT_TRUE(beyond_bf16);
    }
    torch::optim::AdamW opt2(model->parameters(), torch::optim::AdamWOptions(1e-2).weight_decay(0.1));
    EnvMemory memory2(10, 0.15, 0.85);
    const SelfPlayState restored = load_trainer_state(dir, opt2, memory2);
    EXPECT_EQ(restored.next_step, state.next_step);
    ASSERT_EQ(memory2.records().size(), 1u);
    EXPECT_EQ(memory2.records()[0].regret, 0.25);
    EXPECT_TRUE(torch::equal(torch::rand({4}), draw)) << dtype;
    grpo_update(model, opt2, batch, u);
    auto a = p.model->named_parameters();
    auto b = model->named_parameters();
    for (const auto& kv : a) EXPECT_TRUE(torch::equal(kv.value(), b[kv.key()])) << dtype << " " << kv.key();
  }
}

TEST(TrainerState, TruncateMetricsDropsLaterAndCutLines) {
  const fs::path root = fs::path(SPADE_TEST_TMP) / "truncate_metrics";
  fs::remove_all(root);
  const RunDir run = RunDir::create(root.string(), "r");
  for (int t = 0; t < 4; ++t) run.log_metrics(t, {{"reward/mean", t * 0.5}});
  append_line(run.metrics_path(), "{\"step\": 4, \"rew");  // a line cut by SIGKILL
  run.truncate_metrics(2);
  EXPECT_EQ(read_file(run.metrics_path()),
            "{\"step\":0,\"reward/mean\":0.0}\n{\"step\":1,\"reward/mean\":0.5}\n");
}

// Pruning keeps the newest keep_last checkpoints and every one a duel scores (a multiple of duel.every).
TEST(TrainerState, PruneKeepsTheNewestAndTheDuelScoredCheckpoints) {
  const fs::path root = fs::path(SPADE_TEST_TMP) / "prune_checkpoints";
  fs::remove_all(root);
  const RunDir run = RunDir::create(root.string(), "r");
  for (int64_t s : {2, 4, 6, 8, 10, 12}) fs::create_directories(run.checkpoint_dir(s));
  fs::create_directories(run.checkpoint_dir(14) + ".tmp");  // a save cut by a kill: not a checkpoint
  run.prune_checkpoints(2, 4);
  std::vector<std::string> left;
  for (const auto& e : fs::directory_iterator(run.checkpoints_dir())) left.push_back(e.path().filename().string());
  std::sort(left.begin(), left.end());
  // newest two: 10, 12; multiples of 4: 4, 8 (12 is both); the .tmp is left to the saver.
  EXPECT_EQ(left, (std::vector<std::string>{"step_000004", "step_000008", "step_000010", "step_000012",
                                            "step_000014.tmp"}));
  run.prune_checkpoints(2);  // no duel: just the newest two
  left.clear();
  for (const auto& e : fs::directory_iterator(run.checkpoints_dir())) left.push_back(e.path().filename().string());
  std::sort(left.begin(), left.end());
  EXPECT_EQ(left, (std::vector<std::string>{"step_000010", "step_000012", "step_000014.tmp"}));
}

// `spade export`: a clean HF directory (no trainer_state/), bf16 rounded once from the fp32 weights.
TEST(Export, CleanCheckpointFromTrainingCheckpoint) {
  const fs::path root = fs::path(SPADE_TEST_TMP) / "export";
  fs::remove_all(root);
  const RunDir run = RunDir::create(root.string(), "r");
  fixtures::TinyPolicy p = fixtures::make_tiny_policy(4);
  torch::optim::AdamW opt(p.model->parameters(), torch::optim::AdamWOptions(1e-2));
  EnvMemory memory(10, 0.15, 0.85);
  const SelfPlayState state = example_state();
  const TrainerStateRefs refs{state, opt, memory};
  const std::string dir = save_training_checkpoint(run, 7, p.ref(), "bf16", &refs);

  const std::string out = (root / "hf").string();
  export_checkpoint(dir, out, "bf16");
  EXPECT_FALSE(fs::exists(out + "/trainer_state"));
  EXPECT_TRUE(fs::exists(out + "/config.json"));
  EXPECT_TRUE(fs::exists(out + "/tokenizer.model"));
  auto tensors = policy::read_safetensors(out + "/model.safetensors");
  const torch::Tensor w = tensors.at("model.embed_tokens.weight");
  EXPECT_EQ(w.scalar_type(), torch::kBFloat16);
  EXPECT_TRUE(torch::equal(w, p.model->named_parameters()["model.embed_tokens.weight"].to(torch::kBFloat16)));

  export_checkpoint(dir, (root / "hf32").string(), "fp32");
  policy::Transformer m = policy::load_checkpoint((root / "hf32").string());
  for (const auto& kv : p.model->named_parameters())
    EXPECT_TRUE(torch::equal(kv.value(), m->named_parameters()[kv.key()])) << kv.key();

  // --max-shard-size: a limit below the tiny model's size gives shards + model.safetensors.index.json
  // (the split itself is tested in tests/policy/test_checkpoint_shards.cpp) that load back exactly.
  int64_t bytes = 0;
  for (const auto& kv : p.model->named_parameters()) bytes += kv.value().numel() * 4;
  const std::string sharded = (root / "hf_sharded").string();
  export_checkpoint(dir, sharded, "fp32", static_cast<uint64_t>(bytes / 2));
  EXPECT_FALSE(fs::exists(sharded + "/model.safetensors"));
  EXPECT_TRUE(fs::exists(sharded + "/model.safetensors.index.json"));
  EXPECT_TRUE(fs::exists(sharded + "/model-00001-of-00002.safetensors") ||
              fs::exists(sharded + "/model-00001-of-00003.safetensors"));
  policy::Transformer ms = policy::load_checkpoint(sharded);
  for (const auto& kv : p.model->named_parameters())
    EXPECT_TRUE(torch::equal(kv.value(), ms->named_parameters()[kv.key()])) << kv.key();

  EXPECT_THROW(export_checkpoint(dir, dir + "/inner", "bf16"), Error);
  EXPECT_THROW(export_checkpoint(dir, out, "fp16"), Error);
  EXPECT_THROW(export_checkpoint((root / "missing").string(), out, "fp32"), Error);
}
