// Device selection (config train.device, trainer/device.h; issue 5). Expected values from the rules in
// device.h: auto = cuda:LOCAL_RANK when a GPU is visible, else cpu; cuda without a GPU is an error
// naming the key. This machine's LibTorch is CPU-only, so "cuda" must fail here with that error.
#include <gtest/gtest.h>
#include <torch/cuda.h>

#include <filesystem>

#include "common/atomic_file.h"
#include "tests/testing/test_util.h"
#include "tests/trainer/tiny_run.h"
#include "trainer/config.h"
#include "trainer/config_bridge.h"
#include "trainer/device.h"
#include "trainer/train.h"

using namespace spade;
using namespace spade::trainer;
namespace fs = std::filesystem;

using spade::fixtures::error_of;

TEST(Device, SpecSyntax) {
  for (const char* ok : {"auto", "cpu", "cuda", "cuda:0", "cuda:7", "cuda:12"}) EXPECT_TRUE(valid_device_spec(ok)) << ok;
  for (const char* bad : {"", "gpu", "CPU", "cuda:", "cuda:x", "cuda:-1", "cuda0", "cpu:0", "cuda:1:2"})
    EXPECT_FALSE(valid_device_spec(bad)) << bad;
}

TEST(Device, ResolvesWithAGivenGpuCount) {
  EXPECT_EQ(resolve_train_device("cpu", 3, 8), c10::Device(c10::kCPU));
  EXPECT_EQ(resolve_train_device("auto", 0, 0), c10::Device(c10::kCPU));
  EXPECT_EQ(resolve_train_device("auto", 1, 2), c10::Device(c10::kCUDA, 1));   // cuda:LOCAL_RANK
  EXPECT_EQ(resolve_train_device("cuda", 3, 4), c10::Device(c10::kCUDA, 3));
  EXPECT_EQ(resolve_train_device("cuda:2", 0, 4), c10::Device(c10::kCUDA, 2));  // explicit index wins
  EXPECT_EQ(resolve_train_device("cuda:1", 1, 4, 2), c10::Device(c10::kCUDA, 1));  // = LOCAL_RANK: fine
  const std::string shared = error_of([] { resolve_train_device("cuda:0", 1, 4, 2); });  // 2 ranks, one GPU
  EXPECT_NE(shared.find("all 2 ranks of this node on GPU 0"), std::string::npos) << shared;
  const std::string none = error_of([] { resolve_train_device("cuda", 0, 0); });
  EXPECT_NE(none.find("train.device"), std::string::npos) << none;
  EXPECT_NE(none.find("CUDA is not available"), std::string::npos) << none;
  const std::string range = error_of([] { resolve_train_device("cuda:3", 0, 2); });
  EXPECT_NE(range.find("only 2 GPU(s)"), std::string::npos) << range;
  const std::string rank = error_of([] { resolve_train_device("auto", 2, 2); });
  EXPECT_NE(rank.find("LOCAL_RANK"), std::string::npos) << rank;
  EXPECT_NE(error_of([] { resolve_train_device("gpu", 0, 1); }).find("train.device"), std::string::npos);
}

TEST(Device, CudaOnThisMachineFailsWithTheKeyInTheError) {
  if (torch::cuda::is_available()) GTEST_SKIP() << "a GPU is visible: the CPU-only expectation does not apply";
  EXPECT_EQ(resolve_train_device("auto", 0), c10::Device(c10::kCPU));
  for (const char* spec : {"cuda", "cuda:0"}) {
    const std::string e = error_of([&] { resolve_train_device(spec, 0); });
    EXPECT_NE(e.find("train.device is '" + std::string(spec) + "' but CUDA is not available"), std::string::npos) << e;
  }
}

TEST(Device, ConfigKeysAreValidatedAndSaved) {
  EXPECT_NE(error_of([] { parse_config("train: {device: gpu}\n", "x.yaml"); }).find("train.device"), std::string::npos);
  EXPECT_NE(error_of([] { parse_config("train: {autocast: fp16}\n", "x.yaml"); }).find("train.autocast"),
            std::string::npos);
  EXPECT_NE(error_of([] { parse_config("train: {attention: flash}\n", "x.yaml"); }).find("train.attention"),
            std::string::npos);
  const Config c = parse_config(
      "train: {device: 'cuda:1', activation_checkpointing: true, autocast: bf16, attention: sdpa}\n", "x.yaml");
  EXPECT_EQ(c.train.device, "cuda:1");
  EXPECT_TRUE(c.train.activation_checkpointing);
  EXPECT_EQ(c.train.autocast, "bf16");
  EXPECT_EQ(c.train.attention, "sdpa");
  const Config back = parse_config(to_yaml(c), "resolved");
  EXPECT_EQ(back.train.device, "cuda:1");
  EXPECT_TRUE(back.train.activation_checkpointing);
  EXPECT_EQ(back.train.autocast, "bf16");
  EXPECT_EQ(back.train.attention, "sdpa");
  const Config d = parse_config("", "empty.yaml");  // defaults
  EXPECT_EQ(d.train.device, "auto");
  EXPECT_FALSE(d.train.activation_checkpointing);
  EXPECT_EQ(d.train.autocast, "none");
  EXPECT_EQ(d.train.attention, "auto");
}

TEST(Device, DecodeGraphKeysAreValidatedAndReachTheSampler) {
  EXPECT_NE(error_of([] { parse_config("selfplay: {agent: {decode_graph: yes}}\n", "x.yaml"); })
                .find("selfplay.agent.decode_graph"),
            std::string::npos);
  const Config c = parse_config("selfplay: {hint: {decode_graph: 'off'}, designer: {decode_graph: 'on'}}\n", "x.yaml");
  EXPECT_EQ(sampling(c.selfplay.hint).decode_graph, rollout::SamplingParams::DecodeGraphMode::kOff);
  EXPECT_EQ(sampling(c.selfplay.designer).decode_graph, rollout::SamplingParams::DecodeGraphMode::kOn);
  EXPECT_EQ(sampling(c.selfplay.agent).decode_graph, rollout::SamplingParams::DecodeGraphMode::kAuto);
  EXPECT_EQ(parse_config(to_yaml(c), "resolved").selfplay.designer.decode_graph, "on");
}

TEST(Device, RunTrainOnCudaFailsBeforeWritingAnything) {
  if (torch::cuda::is_available()) GTEST_SKIP() << "a GPU is visible";
  const fs::path root = fs::path(SPADE_TEST_TMP) / "device_cuda";
  fs::remove_all(root);
  fs::create_directories(root);  // run.out_dir
  Config config = parse_config(fixtures::tiny_run_yaml(root.string(), 2, 1), "tiny.yaml", {"train.device=cuda"});
  const std::string e = error_of([&] { run_train(config, {false}, [](const std::string&) {}); });
  EXPECT_NE(e.find("train.device is 'cuda' but CUDA is not available"), std::string::npos) << e;
  EXPECT_FALSE(fs::exists(root / "t")) << "the run directory was created before the device check";
}

TEST(Device, ExplicitCpuRunsTheColdStartWithCheckpointingAndBf16) {
  // `spade sft` path (warm start + checkpoint) on train.device=cpu with both memory features on:
  // the device is logged and saved in config.yaml, the warm-start loss is finite, weights stay fp32.
  const fs::path root = fs::path(SPADE_TEST_TMP) / "device_cpu";
  fs::remove_all(root);
  fs::create_directories(root);  // run.out_dir
  Config config = parse_config(fixtures::tiny_run_yaml(root.string(), 2, 1), "tiny.yaml",
                               {"train.device=cpu", "train.activation_checkpointing=true", "train.autocast=bf16"});
  std::vector<std::string> lines;
  const std::string dir = run_train(config, {false}, [&](const std::string& l) { lines.push_back(l); });
  bool logged = false, finite = false;
  for (const std::string& l : lines) {
    logged |= l.find("device: cpu (train.device cpu), autocast bf16, activation checkpointing on") != std::string::npos;
    if (l.find("warm start: 2 steps") != std::string::npos) finite = l.find("nan") == std::string::npos;
  }
  EXPECT_TRUE(logged);
  EXPECT_TRUE(finite);
  const std::string saved = read_file((root / "t" / "config.yaml").string());
  EXPECT_NE(saved.find("device: cpu"), std::string::npos) << saved;
  EXPECT_NE(saved.find("activation_checkpointing: true"), std::string::npos);
  EXPECT_TRUE(fs::exists(fs::path(dir) / "config.json"));
}
