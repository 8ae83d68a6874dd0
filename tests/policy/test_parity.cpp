// Parity of our forward with an independent implementation (issue 4): tests/policy/reference_forward.py,
// a PyTorch-in-Python forward written from the HF architecture descriptions, reads the checkpoints we
// save (tiny random llama incl. llama3 rope scaling, qwen2 with q/k/v biases, qwen3 with q/k norm and an
// explicit head_dim; fp32 and bf16 files; qwen3_moe with top-2 of 8 experts) and its logits must match
// ours within fp32 tolerance.
// Needs /usr/bin/python3 with torch (Debian python3-torch, scripts/setup.sh); skipped with a message
// otherwise.
#include <ATen/Parallel.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "common/atomic_file.h"
#include "policy/checkpoint.h"

using namespace spade::policy;
namespace fs = std::filesystem;

namespace {

struct TorchThreads : ::testing::Environment {
  void SetUp() override { at::set_num_threads(2); }
};
::testing::Environment* const kThreads = ::testing::AddGlobalTestEnvironment(new TorchThreads);

ModelConfig family(const std::string& type) {
  ModelConfig c;
  c.model_type = type;
  c.vocab_size = 97;
  c.hidden_size = 48;
  c.intermediate_size = 80;
  c.num_hidden_layers = 2;
  c.num_attention_heads = 6;
  c.num_key_value_heads = 2;  // GQA, 3 query heads per kv head
  c.head_dim = 8;
  c.rms_norm_eps = 1e-6;
  c.rope_theta = 10000;
  if (type == "llama") {  // untied, llama3 rope scaling with a band of medium frequencies at d = 8
    c.rope_theta = 500000;
    c.rope_scaling.rope_type = "llama3";
    c.rope_scaling.factor = 8;
    c.rope_scaling.low_freq_factor = 1;
    c.rope_scaling.high_freq_factor = 4;
    c.rope_scaling.original_max_position_embeddings = 64;
    c.tie_word_embeddings = false;
  } else if (type == "qwen2") {  // q/k/v biases, tied
    c.attention_bias = true;
    c.rope_theta = 1e6;
    c.tie_word_embeddings = true;
  } else {  // qwen3: q/k norm, head_dim != hidden / heads, untied
    c.qk_norm = true;
    c.head_dim = 16;
    c.rope_theta = 1e6;
    c.tie_word_embeddings = false;
  }
  if (type == "qwen3_moe") {  // 8 experts, top-2 renormalised; layer 0 dense (mlp_only_layers)
    c.num_experts = 8;
    c.num_experts_per_tok = 2;
    c.moe_intermediate_size = 24;
    c.norm_topk_prob = true;
    c.mlp_only_layers = {0};
  }
  return c;
}

Transformer random_model(const ModelConfig& c, uint64_t seed) {
  Transformer m(c);
  m->init_weights(seed, 0.2);
  torch::NoGradGuard ng;
  torch::manual_seed(seed);
  for (auto& p : m->named_parameters())  // non-trivial norm weights and biases
    if (p.key().find("norm") != std::string::npos || p.key().find("bias") != std::string::npos)
      p.value().add_(torch::randn(p.value().sizes()) * 0.2);
  return m;
}

bool python_torch_available() {
  return std::system("/usr/bin/python3 -c 'import torch' > /dev/null 2>&1") == 0;
}

}  // namespace

TEST(Parity, LogitsMatchIndependentPyTorchReference) {
  if (!python_torch_available()) GTEST_SKIP() << "/usr/bin/python3 cannot import torch: apt-get install python3-torch";
  const std::string root = std::string(SPADE_TEST_TMP) + "/policy_parity";
  fs::remove_all(root);
  fs::create_directories(root);
  const std::vector<std::vector<int64_t>> seqs = {
      {1, 5, 9, 33, 2, 96, 40, 41, 42, 7, 7, 7, 0, 13, 64, 80, 3, 5, 11, 70}, {4, 50, 2}};

  struct Case {
    std::string name, type, dtype;
    torch::Tensor ours;  // [sum T, V]
  };
  std::vector<Case> cases = {{"llama", "llama", "float32", {}},
                             {"qwen2", "qwen2", "float32", {}},
                             {"qwen3", "qwen3", "float32", {}},
                             {"qwen3_bf16", "qwen3", "bfloat16", {}},
                             {"qwen3_moe", "qwen3_moe", "float32", {}}};
  nlohmann::json jobs = nlohmann::json::array();
  for (size_t i = 0; i < cases.size(); ++i) {
    Case& k = cases[i];
    const std::string dir = root + "/" + k.name;
    Transformer m = random_model(family(k.type), 100 + i);
    CheckpointSaveOptions o;
    o.dtype = k.dtype;
    save_checkpoint(dir, m, o);
    // Our logits from the loaded checkpoint (a bf16 file is upcast to fp32 on both sides).
    Transformer loaded = load_checkpoint(dir);
    torch::NoGradGuard ng;
    std::vector<torch::Tensor> parts;
    for (const auto& s : seqs) {
      const int64_t T = s.size();
      parts.push_back(loaded->lm_head(
          loaded->forward(torch::tensor(s).view({1, T}), torch::arange(T).view({1, T})))[0]);
    }
    k.ours = torch::cat(parts, 0);
    jobs.push_back({{"checkpoint", dir}, {"ids", seqs}, {"out", dir + "/reference_logits.f32"}});
  }
  spade::write_file_atomic(root + "/jobs.json", jobs.dump());
  const std::string cmd = "/usr/bin/python3 " + std::string(SPADE_SOURCE_DIR) + "/tests/policy/reference_forward.py " +
                          root + "/jobs.json > " + root + "/reference.log 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << spade::read_file(root + "/reference.log");

  for (const Case& k : cases) {
    const std::string bytes = spade::read_file(root + "/" + k.name + "/reference_logits.f32");
    ASSERT_EQ(bytes.size(), static_cast<size_t>(k.ours.numel()) * 4) << k.name;
    auto ref = torch::from_blob(const_cast<char*>(bytes.data()), k.ours.sizes(), torch::kFloat32).clone();
    const double diff = (ref - k.ours).abs().max().item<double>();
    const double scale = ref.abs().max().item<double>();
    std::printf("parity %-11s max |logit| %.3f  max abs diff %.3g\n", k.name.c_str(), scale, diff);
    EXPECT_GT(scale, 0.5) << k.name << ": logits too small to be a meaningful check";
    EXPECT_LT(diff, 1e-4) << k.name;  // fp32: summation-order noise only
  }
}
