// The MFU numerator of `spade bench step` (trainer/step_bench.h): train_flops_per_token by the PaLM
// formula 6 * N + 12 * L * H * Q * T, checked against values worked out by hand below, and the
// Qwen3-4B shape against its published size (Hugging Face Qwen/Qwen3-4B: "4.0B" parameters).
#include <gtest/gtest.h>

#include "policy/model_config.h"
#include "rollout/sample.h"
#include "trainer/step_bench.h"

using namespace spade;

TEST(StepBench, Qwen3_4bShapeAndFlopsPerToken) {
  policy::ModelConfig c = trainer::qwen3_4b_shape();
  // By hand: per layer q 2560*32*128 = 10,485,760, k and v 2*2560*8*128 = 5,242,880, o 10,485,760,
  // gate/up/down 3*2560*9728 = 74,711,040: 100,925,440; x 36 = 3,633,315,840; output projection
  // 151,936*2560 = 388,956,160: N = 4,022,272,000 matmul weights.
  // FLOPs at T = 4096: 6N = 24,133,632,000 plus 12*36*32*128*4096 = 7,247,757,312.
  EXPECT_DOUBLE_EQ(trainer::train_flops_per_token(c, 4096), 31381389312.0);
  // All parameters: N plus the RMSNorm weights, 36*(2*2560 + 2*128) + 2560 = 196,096 (tied: one
  // embedding matrix, which is the output projection).
  EXPECT_EQ(c.num_parameters(), 4022468096);
}

TEST(StepBench, MoeCountsTheRouterAndTheActiveExpertsOnly) {
  policy::ModelConfig c;
  c.model_type = "qwen3_moe";
  c.vocab_size = 10;
  c.hidden_size = 8;
  c.intermediate_size = 16;
  c.num_hidden_layers = 2;
  c.num_attention_heads = 2;
  c.num_key_value_heads = 1;
  c.head_dim = 4;
  c.num_experts = 4;
  c.num_experts_per_tok = 2;
  c.moe_intermediate_size = 6;
  // By hand, per layer: q 8*2*4 = 64, k and v 2*8*1*4 = 64, o 2*4*8 = 64; router 8*4 = 32; two active
  // experts 3*8*6*2 = 288: 512; x 2 = 1,024; output 10*8 = 80: N = 1,104.
  // FLOPs at T = 5: 6*1,104 = 6,624 plus 12*2*2*4*5 = 960.
  EXPECT_DOUBLE_EQ(trainer::train_flops_per_token(c, 5), 7584.0);
  c.mlp_only_layers = {0};  // layer 0 dense: 3*8*16 = 384 instead of 320 (router + experts)
  EXPECT_DOUBLE_EQ(trainer::train_flops_per_token(c, 5), 7584.0 + 6 * (384 - 320));
}

TEST(StepBench, UpdateMfuSumsEachSequenceAtItsOwnLength) {
  policy::ModelConfig c;
  c.model_type = "llama";
  c.vocab_size = 10;
  c.hidden_size = 8;
  c.intermediate_size = 16;
  c.num_hidden_layers = 1;
  c.num_attention_heads = 2;
  c.num_key_value_heads = 1;
  // By hand: N = q 8*8 + k, v 2*8*4 + o 8*8 + MLP 3*8*16 + output 10*8 = 64 + 64 + 64 + 384 + 80 = 656.
  // Per token at length T: 6*656 + 12*1*2*4*T = 3936 + 96 T. Sequences of 5 and 3 tokens:
  // 5*(3936 + 480) + 3*(3936 + 288) = 22,080 + 12,672 = 34,752 FLOPs; over 2 s at 1e-9 TFLOPS peak
  // (1,000 FLOP/s): 34,752 / 2 / 1,000 = 17.376.
  std::vector<rollout::Sample> samples(2);
  samples[0].append_context({1, 2, 3, 4, 5});
  samples[1].append_context({1, 2, 3});
  EXPECT_NEAR(trainer::update_mfu(c, samples, 2.0, 1e-9), 17.376, 1e-9);
  EXPECT_EQ(trainer::update_mfu(c, samples, 0.0, 1e-9), 0.0);
  EXPECT_EQ(trainer::update_mfu(c, samples, 2.0, 0.0), 0.0);
}

// `spade bench step` without a shape: the fit to the machine. Parameter counts from policy/model_shapes.h
// (Qwen/Qwen3-4B and Qwen/Qwen3-0.6B config.json; tiny and 100m worked out there), checked against
// num_parameters() first; the thresholds are 2 x 16 bytes a parameter of each, multiplied out by hand.
TEST(StepBench, FitPicksTheLargestShapeWhoseStateTakesHalfTheFreeMemory) {
  ASSERT_EQ(policy::named_model_shape("qwen3-4b").num_parameters(), 4022468096);
  ASSERT_EQ(policy::named_model_shape("qwen3-0.6b").num_parameters(), 596049920);
  ASSERT_EQ(policy::named_model_shape("100m").num_parameters(), 100094208);
  const trainer::StepBenchFit cpu = trainer::fit_step_bench(std::nullopt);
  EXPECT_EQ(cpu.shape, "tiny");
  EXPECT_EQ(cpu.batch, 4);
  EXPECT_EQ(cpu.seq, 256);
  auto shape_at = [](int64_t free_bytes) { return trainer::fit_step_bench(free_bytes).shape; };
  // qwen3-4b: 32 x 4,022,468,096 = 128,718,979,072 bytes.
  EXPECT_EQ(shape_at(141000000000), "qwen3-4b");  // an H200's ~141 GB
  EXPECT_EQ(shape_at(128718979072), "qwen3-4b");
  EXPECT_EQ(shape_at(128718979071), "qwen3-0.6b");
  EXPECT_EQ(shape_at(80000000000), "qwen3-0.6b");  // an 80 GB H100
  // qwen3-0.6b: 32 x 596,049,920 = 19,073,597,440; 100m: 32 x 100,094,208 = 3,203,014,656.
  EXPECT_EQ(shape_at(19073597440), "qwen3-0.6b");
  EXPECT_EQ(shape_at(19073597439), "100m");
  EXPECT_EQ(shape_at(3203014656), "100m");
  EXPECT_EQ(shape_at(3203014655), "tiny");
  EXPECT_EQ(shape_at(1000), "tiny");  // nothing fits: the smallest, and the step's own error says the rest
  EXPECT_EQ(trainer::fit_step_bench(80000000000).batch, 8);
  EXPECT_EQ(trainer::fit_step_bench(80000000000).seq, 4096);
}
