// `spade bench trainer` (apps/cmd_bench_trainer.cpp) end to end on a tiny shape: our grpo_update and
// the independent PyTorch-in-Python reference (bench/trainer_reference.py, written from the loss and
// architecture descriptions) must compute the same first step, and a reference that computes a
// different loss must be caught.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/testing/test_util.h"

using namespace spade;

namespace {

fixtures::CommandResult run_bench(const std::string& args) {
  return fixtures::run_command(std::string("OMP_WAIT_POLICY=PASSIVE ") + SPADE_BIN + " bench trainer " + args + " 2>/dev/null");
}

std::string work_dir(const std::string& name) {
  const std::string dir = std::string(SPADE_TEST_TMP) + "/bench_trainer_" + name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(SPADE_TEST_TMP);  // the bench makes --work-dir, not its parent
  return dir;
}

// 4 sequences x 48 positions, 1 warm-up-free step per side, 2 threads.
const char* kShape = "--models tiny --batch 4 --seq 48 --steps 1 --warmup 0 --repeats 1 --threads 2 --json";

TEST(BenchTrainer, OursAndReferenceComputeTheSameFirstStep) {
  const fixtures::CommandResult r = run_bench(std::string(kShape) + " --work-dir " + work_dir("same"));
  ASSERT_EQ(r.rc, 0) << r.out;
  const auto report = nlohmann::json::parse(r.out);
  ASSERT_EQ(report["results"].size(), 1u);
  const auto& row = report["results"][0];
  EXPECT_TRUE(row["equivalent"].get<bool>());
  // By hand: 4 x 48 positions; the tiny model is games-tiny's (configs/games-tiny.yaml): vocab 6000,
  // hidden 192, 2 layers, heads 4/2 (head_dim 48), ffn 512, tied:
  // 6000*192 + 2*(2*192 + 192*192 + 2*192*96 + 192*192 + 3*192*512) + 192 = 1,963,968.
  EXPECT_EQ(row["tokens_total"].get<int64_t>(), 4 * 48);
  EXPECT_EQ(row["params"].get<int64_t>(), 1963968);
  const auto& ours = row["ours"]["first_step"];
  const auto& ref = row["reference"]["first_step"];
  EXPECT_EQ(ours["num_tokens"].get<int64_t>(), row["tokens_trainable"].get<int64_t>());
  EXPECT_EQ(ref["num_tokens"].get<int64_t>(), row["tokens_trainable"].get<int64_t>());
  // Same fp32 ops on the same weights: agreement to float rounding (tolerances of the command).
  EXPECT_NEAR(ours["pg_loss"].get<double>(), ref["pg_loss"].get<double>(), 1e-5);
  EXPECT_NEAR(ours["entropy"].get<double>(), ref["entropy"].get<double>(), 1e-4);
  EXPECT_NEAR(ours["grad_norm"].get<double>(), ref["grad_norm"].get<double>(),
              1e-3 * ref["grad_norm"].get<double>());
  // A near-uniform random model (init std 0.02): entropy at temperature 0.6 is close to ln(6000) = 8.70.
  EXPECT_NEAR(ours["entropy"].get<double>(), 8.70, 0.2);
  EXPECT_EQ(row["ours"]["step_s"].size(), 1u);
  EXPECT_GT(row["ratio"].get<double>(), 0.0);
}

TEST(BenchTrainer, ADifferentReferenceLossIsCaught) {
  // A wrapper interpreter that runs the reference with the TIS cap lowered from 2 to 1: the
  // reference's first-step loss then differs, and the command must fail rather than report a ratio.
  const std::string dir = work_dir("differs");
  std::filesystem::create_directories(dir);
  const std::string wrapper = dir + "/python_tis1.sh";
  std::ofstream(wrapper) << "#!/bin/sh\nexec /usr/bin/python3 \"$@\" --tis-cap 1.0\n";
  const fixtures::CommandResult r = run_bench(std::string(kShape) + " --work-dir " + dir + " --python '/bin/sh " + wrapper + "'");
  EXPECT_EQ(r.rc, 1) << r.out;
  const auto report = nlohmann::json::parse(r.out);
  EXPECT_FALSE(report["results"][0]["equivalent"].get<bool>());
}

}  // namespace
