// Activation checkpointing (TransformerImpl::set_activation_checkpointing, issue 5): the loss and every
// parameter gradient equal those of the ordinary (stored-activation) backward of the same model, for
// each family; the checkpoint node is really in the graph; inference paths are unaffected.
// Expected values: the same model run without checkpointing (an independent code path: the ordinary
// autograd graph of decoder_layer). On the CPU with a fixed thread count the recomputation performs the
// same float operations in the same order, so the differences are 0; the tolerance is the brief's 1e-6.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "tests/testing/autograd_graph.h"
#include "tests/testing/random_model.h"

using namespace spade;
using namespace spade::policy;
using spade::fixtures::graph_has;

namespace {

Transformer make_model(const std::string& family) {
  if (family != "qwen3_moe") return fixtures::random_model(family);
  ModelConfig c;  // as tests/policy/test_moe.cpp: 4 experts, top-2, renormalised
  c.model_type = "qwen3_moe";
  c.vocab_size = 41; c.hidden_size = 16; c.intermediate_size = 40; c.num_hidden_layers = 2;
  c.num_attention_heads = 4; c.num_key_value_heads = 2; c.head_dim = 8; c.rope_theta = 1e6;
  c.qk_norm = true; c.tie_word_embeddings = false;
  c.num_experts = 4; c.num_experts_per_tok = 2; c.moe_intermediate_size = 12; c.norm_topk_prob = true;
  Transformer m(c);
  m->init_weights(11, 0.3);
  return m;
}

// A next-token loss over two right-padded rows (the trainer's shape: [B, T] ids, positions 0..T-1),
// weighted per token so that every position's gradient matters.
torch::Tensor loss_of(Transformer& m) {
  const int64_t V = m->config().vocab_size;
  torch::Tensor ids = torch::tensor({3, 9, 1, 30, 4, 17, 5, 2, 8, 12, 33, 6, 1, 1}, torch::kLong).remainder(V).view({2, 7});
  torch::Tensor pos = torch::arange(7, torch::kLong).unsqueeze(0).expand({2, 7}).contiguous();
  torch::Tensor hidden = m->forward(ids, pos);
  torch::Tensor logp = torch::log_softmax(m->lm_head(hidden), -1);
  torch::Tensor targets = ids.roll(-1, 1);
  torch::Tensor weights = torch::linspace(0.5, 1.5, 14).view({2, 7});
  return -(logp.gather(-1, targets.unsqueeze(-1)).squeeze(-1) * weights).sum();
}

}  // namespace

class ActivationCheckpointing : public ::testing::TestWithParam<std::string> {};

TEST_P(ActivationCheckpointing, LossAndEveryGradientEqualTheStoredActivationBackward) {
  Transformer plain = make_model(GetParam());
  Transformer ckpt = make_model(GetParam());  // same seed: identical weights
  ckpt->set_activation_checkpointing(true);
  ASSERT_TRUE(ckpt->activation_checkpointing());
  ASSERT_FALSE(plain->activation_checkpointing());

  torch::Tensor l0 = loss_of(plain);
  torch::Tensor l1 = loss_of(ckpt);
  EXPECT_FALSE(graph_has(l0, "CheckpointedLayer"));
  EXPECT_TRUE(graph_has(l1, "CheckpointedLayer")) << "the checkpoint node is missing from the graph";
  EXPECT_NEAR(l0.item<double>(), l1.item<double>(), 1e-6);
  l0.backward();
  l1.backward();
  auto a = plain->named_parameters(), b = ckpt->named_parameters();
  ASSERT_EQ(a.size(), b.size());
  for (const auto& item : a) {
    const torch::Tensor& ga = item.value().grad();
    const torch::Tensor& gb = b[item.key()].grad();
    // An expert no token was routed to has no gradient in either model (HF behaviour: unused experts
    // take no part in the graph); every other weight must get one through the checkpoint.
    ASSERT_EQ(ga.defined(), gb.defined()) << item.key();
    if (item.key().find(".experts.") == std::string::npos) {
      ASSERT_TRUE(gb.defined()) << item.key();
    }
    if (!ga.defined()) continue;
    EXPECT_GT(ga.abs().max().item<double>(), 0.0) << item.key();
    EXPECT_LE((ga - gb).abs().max().item<double>(), 1e-6) << item.key();
  }
}

TEST_P(ActivationCheckpointing, GradientsAccumulateOverTwoBackwardsLikeThePlainModel) {
  // Gradient accumulation over micro-batches: two backward passes add up the same way.
  Transformer plain = make_model(GetParam());
  Transformer ckpt = make_model(GetParam());
  ckpt->set_activation_checkpointing(true);
  for (int i = 0; i < 2; ++i) {
    loss_of(plain).backward();
    loss_of(ckpt).backward();
  }
  auto b = ckpt->named_parameters();
  for (const auto& item : plain->named_parameters()) {
    ASSERT_EQ(item.value().grad().defined(), b[item.key()].grad().defined()) << item.key();
    if (item.value().grad().defined()) {
      EXPECT_LE((item.value().grad() - b[item.key()].grad()).abs().max().item<double>(), 2e-6) << item.key();
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Families, ActivationCheckpointing,
                         ::testing::Values("llama", "qwen2", "qwen3", "qwen3_moe"));

TEST(ActivationCheckpointingModes, InferenceAndCachedDecodingAreUnchanged) {
  // Without grad mode (sampling) or with a KV cache, forward() takes the ordinary path: same values,
  // no checkpoint node.
  Transformer plain = fixtures::random_model("qwen3");
  Transformer ckpt = fixtures::random_model("qwen3");
  ckpt->set_activation_checkpointing(true);
  torch::Tensor ids = torch::tensor({1, 5, 9, 2}, torch::kLong).view({1, 4});
  torch::Tensor pos = torch::arange(4, torch::kLong).view({1, 4});
  {
    torch::NoGradGuard ng;
    EXPECT_TRUE(torch::equal(plain->forward(ids, pos), ckpt->forward(ids, pos)));
  }
  KVCache c0, c1;
  torch::Tensor h0 = plain->forward(ids, pos, &c0), h1 = ckpt->forward(ids, pos, &c1);
  EXPECT_FALSE(graph_has(h1, "CheckpointedLayer"));
  EXPECT_TRUE(torch::equal(h0, h1));
  EXPECT_EQ(c1.length(), 4);
}

TEST(ActivationCheckpointingModes, AutogradGradEqualsThePlainModel) {
  // torch::autograd::grad (no .grad accumulation) through the checkpoint nodes.
  Transformer plain = fixtures::random_model("llama");
  Transformer ckpt = fixtures::random_model("llama");
  ckpt->set_activation_checkpointing(true);
  const std::vector<torch::Tensor> pa = plain->parameters(), pb = ckpt->parameters();
  const auto ga = torch::autograd::grad({loss_of(plain)}, pa);
  const auto gb = torch::autograd::grad({loss_of(ckpt)}, pb);
  ASSERT_EQ(ga.size(), gb.size());
  for (size_t i = 0; i < ga.size(); ++i) {
    EXPECT_LE((ga[i] - gb[i]).abs().max().item<double>(), 1e-6) << i;
    EXPECT_FALSE(pb[i].grad().defined()) << i;  // nothing accumulated
  }
}
