// `spade bench step` by the real binary: without arguments it runs a shape that fits the machine (on
// the CPU the tiny shape at 4 x 256 tokens, trainer::fit_step_bench), and an allocation failure is one
// line naming the shape and the bytes, never LibTorch's C++ backtrace.
#include <gtest/gtest.h>

#include <torch/cuda.h>

#include <algorithm>
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
