// `spade bench sampler` (apps/cmd_bench_sampler.cpp) and its named model shapes (policy/model_shapes.h):
// the shapes' parameter counts against hand arithmetic and the published sizes, and the bench end to end
// on the tiny shape with a transformers baseline that cannot import transformers (what every machine
// without transformers runs: the row must say skipped, with no ratio), with a baseline that fails, and with
// two decode-graph modes timed side by side.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "common/error.h"
#include "policy/model_shapes.h"
#include "tests/testing/test_util.h"

using namespace spade;

namespace {

fixtures::CommandResult run_bench(const std::string& args) {
  return fixtures::run_command(std::string("OMP_WAIT_POLICY=PASSIVE ") + SPADE_BIN + " bench sampler " + args + " 2>/dev/null");
}

std::string work_dir(const std::string& name) {
  const std::string dir = std::string(SPADE_TEST_TMP) + "/bench_sampler_" + name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

// Tiny model, 2 prompts of 8 tokens, 4 new tokens each: 8 tokens per side.
const char* kShape = "--models tiny --batches 2 --prompt 8 --new 4 --threads 2";

}  // namespace

TEST(BenchShapes, ParameterCountsByHand) {
  // Each count: embedding vocab*h (tied: also the output projection) + final norm h + per layer
  // [q h*H*d + k,v 2*h*K*d + o H*d*h + q/k norms 2*d + MLP 3*h*I + 2 layer norms 2*h].
  // Qwen3-0.6B (h 1024, H 16, K 8, d 128, I 3072, 28 layers, vocab 151936): per layer 2,097,152 +
  // 2,097,152 + 2,097,152 + 256 + 9,437,184 + 2,048 = 15,730,944; x 28 = 440,466,432 (HF model card:
  // "0.44B non-embedding"); + 151,936*1024 = 155,582,464 + 1,024 = 596,049,920 (card: "0.6B").
  EXPECT_EQ(policy::named_model_shape("qwen3-0.6b").num_parameters(), 596049920);
  // Qwen3-4B (h 2560, H 32, K 8, d 128, I 9728, 36 layers): per layer 10,485,760 + 5,242,880 +
  // 10,485,760 + 256 + 74,711,040 + 5,120 = 100,930,816; x 36 = 3,633,509,376 (card: "3.6B
  // non-embedding"); + 151,936*2560 = 388,956,160 + 2,560 = 4,022,468,096 (card: "4.0B").
  EXPECT_EQ(policy::named_model_shape("qwen3-4b").num_parameters(), 4022468096);
  // tiny (h 256, H 4, K 2, d 64, I 512, 4 layers, vocab 4096): 65,536 + 65,536 + 65,536 + 128 + 393,216
  // + 512 = 590,464; x 4 = 2,361,856; + 1,048,576 + 256 = 3,410,688.
  EXPECT_EQ(policy::named_model_shape("tiny").num_parameters(), 3410688);
  // 100m (h 768, H 12, K 4, d 64, I 2048, 12 layers, vocab 32000): 589,824 + 393,216 + 589,824 + 128 +
  // 4,718,592 + 1,536 = 6,293,120; x 12 = 75,517,440; + 24,576,000 + 768 = 100,094,208.
  EXPECT_EQ(policy::named_model_shape("100m").num_parameters(), 100094208);
  // The fields the counts do not pin (HF config.json of both Qwen3 models).
  for (const char* name : {"qwen3-0.6b", "qwen3-4b"}) {
    const policy::ModelConfig c = policy::named_model_shape(name);
    EXPECT_EQ(c.model_type, "qwen3") << name;
    EXPECT_TRUE(c.qk_norm && c.tie_word_embeddings) << name;
    EXPECT_EQ(c.rope_theta, 1e6) << name;
    EXPECT_EQ(c.rms_norm_eps, 1e-6) << name;
    EXPECT_EQ(c.max_position_embeddings, 40960) << name;
  }
  EXPECT_THROW(policy::named_model_shape("qwen3-8b"), spade::Error);
}

TEST(BenchSampler, MissingTransformersIsASkippedBaselineWithoutARatio) {
  // The interpreter sees a `transformers` module whose import fails, as on a machine without it; the
  // real bench/sampler_hf.py then prints {"skipped": ...}. The plain-loop baseline still runs.
  const std::string dir = work_dir("skip");
  std::filesystem::create_directories(dir + "/hide");
  std::ofstream(dir + "/hide/transformers.py") << "raise ImportError('transformers hidden by the test')\n";
  std::ofstream(dir + "/python.sh") << "#!/bin/sh\nPYTHONPATH=" << dir << "/hide exec /usr/bin/python3 \"$@\"\n";
  const fixtures::CommandResult r = run_bench(std::string(kShape) + " --baseline hf,loop --python '/bin/sh " + dir +
                                "/python.sh' --work-dir " + dir);
  ASSERT_EQ(r.rc, 0) << r.out;
  const auto report = nlohmann::json::parse(r.out);
  ASSERT_EQ(report["results"].size(), 1u);
  const auto& row = report["results"][0];
  EXPECT_EQ(row["tokens"].get<int64_t>(), 2 * 4);
  EXPECT_TRUE(row["peak_gpu_allocated_mb"].is_null());  // CPU: no allocator peaks, and no number made up
  const auto& hf = row["baselines"]["hf"];
  ASSERT_TRUE(hf.contains("skipped")) << hf.dump();
  EXPECT_NE(hf["skipped"].get<std::string>().find("transformers hidden by the test"), std::string::npos);
  EXPECT_FALSE(hf.contains("ratio"));
  EXPECT_FALSE(hf.contains("tokens_per_s"));
  const auto& loop = row["baselines"]["loop"];
  EXPECT_EQ(loop["tokens"].get<int64_t>(), 2 * 4) << loop.dump();
  EXPECT_NEAR(loop["ratio"].get<double>(), row["tokens_per_s"].get<double>() / loop["tokens_per_s"].get<double>(),
              1e-9 * loop["ratio"].get<double>());
}

TEST(BenchSampler, AFailingBaselineIsRecordedAndTheExitStatusIsOne) {
  const std::string dir = work_dir("fail");
  std::ofstream(dir + "/broken_ref.py") << "import sys\nprint('broken baseline')\nsys.exit(2)\n";
  const fixtures::CommandResult r = run_bench(std::string(kShape) + " --reference " + dir + "/broken_ref.py --work-dir " + dir);
  EXPECT_EQ(r.rc, 1) << r.out;
  const auto report = nlohmann::json::parse(r.out);
  const auto& row = report["results"][0];
  EXPECT_GT(row["tokens_per_s"].get<double>(), 0.0);  // our numbers are kept
  const auto& loop = row["baselines"]["loop"];
  ASSERT_TRUE(loop.contains("error")) << loop.dump();
  EXPECT_NE(loop["error"].get<std::string>().find("broken baseline"), std::string::npos);
  EXPECT_FALSE(loop.contains("ratio"));
}

TEST(BenchSampler, UnknownShapeOrBaselineIsAnError) {
  EXPECT_NE(run_bench("--models tiny,qwen3-8b --no-reference --work-dir " + work_dir("unknown")).rc, 0);
  EXPECT_NE(run_bench("--models tiny --baseline vllm --work-dir " + work_dir("unknown")).rc, 0);
  EXPECT_NE(run_bench("--models tiny --decode-graph sometimes --no-reference --work-dir " + work_dir("unknown")).rc, 0);
}

TEST(BenchSampler, DecodeGraphModesAreTimedSideBySideAgainstOneBaselineRun) {
  // --decode-graph auto,on: one row per mode (on the CPU "on" runs DecodeGraph's fixed step eagerly),
  // each with its own ratio against the same plain-loop baseline run.
  const std::string dir = work_dir("graph_modes");
  const fixtures::CommandResult r = run_bench(std::string(kShape) + " --decode-graph auto,on --work-dir " + dir);
  ASSERT_EQ(r.rc, 0) << r.out;
  const auto report = nlohmann::json::parse(r.out);
  ASSERT_EQ(report["results"].size(), 2u);
  const auto& a = report["results"][0];
  const auto& b = report["results"][1];
  EXPECT_EQ(a["decode_graph"], "auto");
  EXPECT_EQ(b["decode_graph"], "on");
  EXPECT_EQ(a["tokens"].get<int64_t>(), 2 * 4);
  EXPECT_EQ(b["tokens"].get<int64_t>(), 2 * 4);
  EXPECT_EQ(a["baselines"]["loop"]["tokens_per_s"], b["baselines"]["loop"]["tokens_per_s"]);  // one baseline run
  for (const auto* row : {&a, &b})
    EXPECT_NEAR((*row)["baselines"]["loop"]["ratio"].get<double>(),
                (*row)["tokens_per_s"].get<double>() / (*row)["baselines"]["loop"]["tokens_per_s"].get<double>(), 1e-9);
}
