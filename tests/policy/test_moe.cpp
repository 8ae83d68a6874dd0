// qwen3_moe (issue 4): config parsing, parameter names, router semantics and checkpoint round trip.
// Logit parity against the independent Python reference is in test_parity.cpp.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <filesystem>

#include "common/error.h"
#include "policy/checkpoint.h"

using namespace spade::policy;

namespace {

ModelConfig moe_config(int64_t experts, int64_t k, bool norm) {
  ModelConfig c;
  c.model_type = "qwen3_moe";
  c.vocab_size = 41; c.hidden_size = 16; c.intermediate_size = 40; c.num_hidden_layers = 2;
  c.num_attention_heads = 4; c.num_key_value_heads = 2; c.head_dim = 8; c.rope_theta = 1e6;
  c.qk_norm = true; c.tie_word_embeddings = false;
  c.num_experts = experts; c.num_experts_per_tok = k; c.moe_intermediate_size = 12; c.norm_topk_prob = norm;
  return c;
}

torch::Tensor logits_of(Transformer& m, const std::vector<int64_t>& ids) {
  torch::NoGradGuard ng;
  const int64_t T = ids.size();
  return m->lm_head(m->forward(torch::tensor(ids).view({1, T}), torch::arange(T).view({1, T})))[0];
}

}  // namespace

TEST(Moe, ConfigJsonRoundTripAndErrors) {
  ModelConfig c = moe_config(8, 2, true);
  c.mlp_only_layers = {1};
  c.decoder_sparse_step = 1;
  ModelConfig back = ModelConfig::from_json(c.to_json(), "cfg");
  EXPECT_EQ(back.num_experts, 8);
  EXPECT_EQ(back.num_experts_per_tok, 2);
  EXPECT_EQ(back.moe_intermediate_size, 12);
  EXPECT_TRUE(back.norm_topk_prob);
  EXPECT_TRUE(back.qk_norm);
  EXPECT_EQ(back.mlp_only_layers, std::vector<int64_t>{1});
  EXPECT_TRUE(back.is_moe_layer(0));
  EXPECT_FALSE(back.is_moe_layer(1));
  EXPECT_EQ(architecture_for("qwen3_moe"), "Qwen3MoeForCausalLM");
  auto j = c.to_json();
  j.erase("num_experts");
  EXPECT_THROW(ModelConfig::from_json(j, "cfg"), spade::Error);
  j = c.to_json();
  j["num_experts_per_tok"] = 9;
  EXPECT_THROW(ModelConfig::from_json(j, "cfg"), spade::Error);
  // transformers 5.17's Qwen3MoeConfig.to_json_string() names the expert count 'num_local_experts'
  // (seen on the H200 image: {"num_experts_per_tok": 8, "num_local_experts": 128, ...}).
  j = c.to_json();
  j.erase("num_experts");
  j["num_local_experts"] = 8;
  EXPECT_EQ(ModelConfig::from_json(j, "cfg").num_experts, 8);
  j["num_experts"] = 6;  // both, disagreeing
  EXPECT_THROW(ModelConfig::from_json(j, "cfg"), spade::Error);
  j["num_experts"] = 8;  // both, agreeing
  EXPECT_EQ(ModelConfig::from_json(j, "cfg").num_experts, 8);
}

TEST(Moe, ParameterNamesAndCount) {
  ModelConfig c = moe_config(4, 2, true);
  c.mlp_only_layers = {0};
  Transformer m(c);
  auto params = m->named_parameters();
  EXPECT_TRUE(params.contains("model.layers.0.mlp.gate_proj.weight"));   // dense layer
  EXPECT_TRUE(params.contains("model.layers.1.mlp.gate.weight"));        // router
  EXPECT_TRUE(params.contains("model.layers.1.mlp.experts.3.down_proj.weight"));
  EXPECT_FALSE(params.contains("model.layers.1.mlp.gate_proj.weight"));
  EXPECT_EQ(params["model.layers.1.mlp.gate.weight"].sizes(), (std::vector<int64_t>{4, 16}));
  EXPECT_EQ(params["model.layers.1.mlp.experts.0.up_proj.weight"].sizes(), (std::vector<int64_t>{12, 16}));
  int64_t n = 0;
  for (auto& p : m->parameters()) n += p.numel();
  EXPECT_EQ(n, c.num_parameters());
}

TEST(Moe, RouterSemantics) {
  const std::vector<int64_t> ids = {1, 7, 3, 30, 2, 9};
  // (a) One expert, top-1, renormalised: weight 1, so the layer is exactly a dense SwiGLU MLP.
  {
    ModelConfig mc = moe_config(1, 1, true);
    Transformer moe(mc);
    moe->init_weights(3, 0.3);
    ModelConfig dc = mc;
    dc.model_type = "qwen3";
    dc.num_experts = dc.num_experts_per_tok = dc.moe_intermediate_size = 0;
    dc.intermediate_size = 12;
    Transformer dense(dc);
    torch::NoGradGuard ng;
    auto mp = moe->named_parameters(), dp = dense->named_parameters();
    for (auto& p : dp) {
      std::string name = p.key();
      for (const char* proj : {"gate_proj", "up_proj", "down_proj"}) {
        const std::string dense_name = std::string("mlp.") + proj;
        auto at = name.find(dense_name);
        if (at != std::string::npos) name.replace(at, dense_name.size(), std::string("mlp.experts.0.") + proj);
      }
      p.value().copy_(mp[name]);
    }
    EXPECT_LT((logits_of(moe, ids) - logits_of(dense, ids)).abs().max().item<double>(), 1e-5);
  }
  // (b) All experts chosen and renormalised == the softmax-weighted mixture of every expert; without
  //     renormalisation top-k of k < E gives weights that do not sum to 1, so the outputs differ.
  {
    Transformer a(moe_config(4, 2, true)), b(moe_config(4, 2, false));
    a->init_weights(5, 0.3);
    b->init_weights(5, 0.3);
    EXPECT_GT((logits_of(a, ids) - logits_of(b, ids)).abs().max().item<double>(), 1e-4);
  }
}

TEST(Moe, CheckpointRoundTripIsBitIdentical) {
  const std::string dir = std::string(SPADE_TEST_TMP) + "/policy_moe/ckpt";
  std::filesystem::remove_all(dir);
  ModelConfig c = moe_config(4, 2, true);
  Transformer m(c);
  m->init_weights(9, 0.2);
  save_checkpoint(dir, m);
  Transformer back = load_checkpoint(dir);
  EXPECT_EQ(back->config().num_experts, 4);
  auto a = m->named_parameters(), b = back->named_parameters();
  ASSERT_EQ(a.size(), b.size());
  for (auto& p : a) EXPECT_TRUE(torch::equal(p.value(), b[p.key()])) << p.key();
}
