// `spade bench step` by the real binary: without arguments it runs a shape that fits the machine (on
// the CPU the tiny shape at 4 x 256 tokens, trainer::fit_step_bench), and an allocation failure is one
// line naming the shape and the bytes, never LibTorch's C++ backtrace; --nproc with --sharding shards
// the optimizer state over local ranks.
#include <gtest/gtest.h>

#include <torch/cuda.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/testing/test_util.h"

namespace {

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST(BenchStepCli, WithoutArgumentsRunsAShapeThatFitsTheMachine) {
  // Where a GPU is visible the fit is a GPU shape (minutes of work): --device cpu keeps this test on the
  // CPU's fit there; here, without a GPU, the command runs exactly as typed.
  const std::string args = torch::cuda::is_available() ? " bench step --device cpu" : " bench step";
  const auto r = spade::fixtures::run_command(std::string(SPADE_BIN) + args + " 2>&1");
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_TRUE(has(r.out, "bench step: --shape auto on cpu: tiny")) << r.out;
  const std::string last = r.out.substr(r.out.rfind('{'));
  const nlohmann::json j = nlohmann::json::parse(last);
  EXPECT_EQ(j["device"], "cpu");
  EXPECT_EQ(j["shape"], "tiny");
  EXPECT_EQ(j["batch"], 4);
  EXPECT_EQ(j["seq"], 256);
  EXPECT_EQ(j["params"], 3410688);  // policy/model_shapes.h: the tiny shape's documented parameter count
  EXPECT_GT(j["tokens_per_s"].get<double>(), 0.0);
}

TEST(BenchStepCli, AnAllocationFailureIsOneLineWithTheShapeAndBytes) {
  // --intermediate 1,000,000,000 with the tiny shape's hidden 256: each MLP weight is 1e9 x 256 fp32 =
  // 1,024,000,000,000 bytes, far over the 8 GiB of address space this process is given (ulimit -v), so
  // LibTorch's CPU allocator fails at the first of them whatever the machine's memory and overcommit.
  const auto r = spade::fixtures::run_command("ulimit -v 8388608; " + std::string(SPADE_BIN) +
                                              " bench step --shape tiny --device cpu --intermediate 1000000000 "
                                              "--warmup 0 2>&1");
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;  // one line
  EXPECT_TRUE(has(r.out, "error: bench step: out of memory at shape tiny (4 layers, hidden 256, intermediate "
                         "1000000000, vocab 4096: "))
      << r.out;
  EXPECT_TRUE(has(r.out, "batch 4 x 256 tokens, cpu: ")) << r.out;
  EXPECT_TRUE(has(r.out, "1024000000000 bytes")) << r.out;
  EXPECT_FALSE(has(r.out, "Exception raised from")) << r.out;  // c10::Error's backtrace header
  EXPECT_FALSE(has(r.out, "frame #")) << r.out;
  EXPECT_FALSE(has(r.out, "enforce fail at")) << r.out;  // LibTorch's source position, dropped
}

// --nproc 2 with each distributed.sharding mode: two local Gloo ranks, rank 0 prints the line. Same
// weights and the same per-rank batches in every mode, so the clipped step's gradient norm is none's up
// to summation: none's clip_grad_norm_ accumulates the squares in float32 on the CPU (1.0e-4 relative
// off float64 on a 2^20-element vector, measured with torch 1.13), the sharded optimizer in float64
// (measured here: 5.8e-5 apart at 1 layer, 1.8M parameters). AdamW's moments on rank 0 are 2 x 4 bytes per parameter unsharded and per
// element of its shard, ceil(P / 2), when sharded (Rajbhandari et al. 2020, ZeRO stage 1 and 2).
TEST(BenchStepCli, ShardingOverTwoLocalRanksHalvesTheOptimizerState) {
  std::map<std::string, nlohmann::json> row;
  for (const std::string mode : {"none", "optimizer", "gradients"}) {
    const auto r = spade::fixtures::run_command(
        std::string(SPADE_BIN) + " bench step --shape tiny --layers 1 --batch 2 --seq 32 --device cpu --threads 1 "
        "--warmup 0 --steps 1 --nproc 2 --sharding " + mode + " 2>&1");
    ASSERT_EQ(r.rc, 0) << mode << ": " << r.out;
    ASSERT_EQ(std::count(r.out.begin(), r.out.end(), '{'), 1) << "one line, from rank 0: " << r.out;
    row[mode] = nlohmann::json::parse(r.out.substr(r.out.rfind('{')));
    EXPECT_EQ(row[mode]["world_size"], 2) << mode;
    EXPECT_EQ(row[mode]["group"], "gloo") << mode;
    EXPECT_EQ(row[mode]["sharding"], mode);
  }
  const int64_t P = row["none"]["params"].get<int64_t>();
  EXPECT_EQ(row["none"]["optimizer_state_bytes"].get<int64_t>(), 8 * P);
  for (const std::string mode : {"optimizer", "gradients"}) {
    EXPECT_EQ(row[mode]["optimizer_state_bytes"].get<int64_t>(), 8 * ((P + 1) / 2)) << mode;
    EXPECT_NEAR(row[mode]["grad_norm"].get<double>(), row["none"]["grad_norm"].get<double>(),
                2e-4 * row["none"]["grad_norm"].get<double>())
        << mode;
  }
  // Without a group there is nothing to shard over: an error naming the option to add.
  const auto alone = spade::fixtures::run_command(std::string(SPADE_BIN) +
                                                  " bench step --shape tiny --sharding optimizer --device cpu 2>&1");
  EXPECT_EQ(alone.rc, 1) << alone.out;
  EXPECT_TRUE(has(alone.out, "sharding optimizer needs a process group (--group, or --nproc)")) << alone.out;
}
