// TransformerImpl::AttentionBackend (issue 5): causal attention over a whole sequence computed by
// scaled_dot_product_attention (kSdpa: FlashAttention on CUDA) gives the same hidden states and the
// same gradients as the grouped-matmul path (kMatmul), for grouped-query and multi-head layouts, with
// biases and q/k norms, with and without activation checkpointing.
// Expected values: the kMatmul path of the same model (an independent computation: explicit scores,
// a boolean causal mask, a separate softmax, K/V read per kv head without expansion). The two differ
// only in fp32 summation order: tolerance 1e-5 (relative to each tensor's largest entry) where the
// values are O(1) (init std 0.3).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "policy/torch_compat.h"
#include "tests/testing/autograd_graph.h"
#include "tests/testing/random_model.h"

using namespace spade;
using namespace spade::policy;
using Backend = TransformerImpl::AttentionBackend;
using spade::fixtures::graph_has;

namespace {

// The fixture's model of `family` (4 query heads over 2 kv heads), or with kv heads == query heads
// (multi-head attention, no expansion) when `mha`.
Transformer make_model(const std::string& family, bool mha) {
  Transformer base = fixtures::random_model(family);
  if (!mha) return base;
  ModelConfig c = base->config();
  c.num_key_value_heads = c.num_attention_heads;
  Transformer m(c);
  m->init_weights(11, 0.3);
  return m;
}

// Two right-padded rows as the trainer feeds them ([B, T] ids, positions 0..T-1, no key mask), with a
// per-token weighted next-token loss so every position's gradient matters.
torch::Tensor loss_of(Transformer& m, torch::Tensor* hidden_out = nullptr) {
  const int64_t V = m->config().vocab_size;
  torch::Tensor ids = torch::tensor({3, 9, 1, 30, 4, 17, 5, 2, 8, 12, 33, 6, 1, 1}, torch::kLong).remainder(V).view({2, 7});
  torch::Tensor pos = torch::arange(7, torch::kLong).unsqueeze(0).expand({2, 7}).contiguous();
  torch::Tensor hidden = m->forward(ids, pos);
  if (hidden_out) *hidden_out = hidden.detach();
  torch::Tensor logp = torch::log_softmax(m->lm_head(hidden), -1);
  torch::Tensor weights = torch::linspace(0.5, 1.5, 14).view({2, 7});
  return -(logp.gather(-1, ids.roll(-1, 1).unsqueeze(-1)).squeeze(-1) * weights).sum();
}

double rel_diff(const torch::Tensor& a, const torch::Tensor& b) {
  const double scale = std::max(1.0, a.abs().max().item<double>());
  return (a - b).abs().max().item<double>() / scale;
}

struct Case {
  std::string family;
  bool mha;
  bool checkpointing;
};

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  return info.param.family + (info.param.mha ? "_mha" : "_gqa") + (info.param.checkpointing ? "_checkpointed" : "");
}

}  // namespace

class AttentionBackendEquality : public ::testing::TestWithParam<Case> {};

TEST_P(AttentionBackendEquality, HiddenStatesAndEveryGradientEqualTheMatmulPath) {
  const Case& c = GetParam();
  Transformer matmul = make_model(c.family, c.mha);
  Transformer sdpa = make_model(c.family, c.mha);  // same seed: identical weights
  matmul->set_attention_backend(Backend::kMatmul);
  sdpa->set_attention_backend(Backend::kSdpa);
  matmul->set_activation_checkpointing(c.checkpointing);
  sdpa->set_activation_checkpointing(c.checkpointing);

  torch::Tensor h0, h1;
  torch::Tensor l0 = loss_of(matmul, &h0), l1 = loss_of(sdpa, &h1);
  EXPECT_LE(rel_diff(h0, h1), 1e-5);
  EXPECT_NEAR(l0.item<double>(), l1.item<double>(), 1e-5 * std::abs(l0.item<double>()));
  l0.backward();
  l1.backward();
  auto b = sdpa->named_parameters();
  for (const auto& item : matmul->named_parameters()) {
    const torch::Tensor& ga = item.value().grad();
    const torch::Tensor& gb = b[item.key()].grad();
    ASSERT_TRUE(ga.defined() && gb.defined()) << item.key();
    EXPECT_GT(ga.abs().max().item<double>(), 0.0) << item.key();
    EXPECT_LE(rel_diff(ga, gb), 1e-5) << item.key();
  }
}

INSTANTIATE_TEST_SUITE_P(Families, AttentionBackendEquality,
                         ::testing::Values(Case{"llama", false, false}, Case{"llama", true, false},
                                           Case{"qwen2", false, false}, Case{"qwen3", false, false},
                                           Case{"qwen3", true, false}, Case{"qwen3", false, true},
                                           Case{"llama", true, true}),
                         case_name);

TEST(AttentionBackend, TheFusedPathReplacesTheMaskedScoresOnlyWhereItApplies) {
  // The matmul path masks its explicit scores in place through a view (masked_fill_ on scores.view():
  // a CopySlices node in the graph); the fused path has no score tensor of ours to mask (LibTorch 1.13's
  // math kernel adds a float mask out of place; 2.x kernels mask inside). kAuto is the matmul path on
  // the CPU.
  torch::Tensor ids = torch::tensor({1, 5, 9, 2}, torch::kLong).view({1, 4});
  torch::Tensor pos = torch::arange(4, torch::kLong).view({1, 4});
  Transformer m = fixtures::random_model("qwen3");
  EXPECT_EQ(m->attention_backend(), Backend::kAuto);
  EXPECT_TRUE(graph_has(m->forward(ids, pos), "CopySlices"));  // kAuto on the CPU
  m->set_attention_backend(Backend::kMatmul);
  EXPECT_TRUE(graph_has(m->forward(ids, pos), "CopySlices"));
  m->set_attention_backend(Backend::kSdpa);
  EXPECT_FALSE(graph_has(m->forward(ids, pos), "CopySlices"));
  // With a key mask or a KV cache the mask is not plain causal: the matmul path runs, same values.
  Transformer ref = fixtures::random_model("qwen3");
  ref->set_attention_backend(Backend::kMatmul);
  torch::Tensor key_mask = torch::tensor({0, 1, 1, 1}, torch::kBool).view({1, 4});
  torch::Tensor masked = m->forward(ids, pos, nullptr, key_mask);
  EXPECT_TRUE(graph_has(masked, "CopySlices"));
  EXPECT_TRUE(torch::equal(masked, ref->forward(ids, pos, nullptr, key_mask)));
  KVCache c0, c1;
  torch::Tensor cached = m->forward(ids, pos, &c0);  // (the cache's own writes are CopySlices too)
  EXPECT_TRUE(torch::equal(cached, ref->forward(ids, pos, &c1)));
}

TEST(AttentionBackend, UnderBf16AutocastTheFusedPathTakesTheProjectionsDtype) {
  // Under autocast, RoPE leaves q and k in fp32 while v is the bf16 output of its projection; the fused
  // kernels take one dtype (FlashAttention: one 16-bit dtype for q, k and v), so q and k follow v. Expected: the matmul path
  // under the same autocast (its own bf16 rounding); tolerance: bf16 has 8 significant bits, and the
  // math kernel also runs its softmax in bf16, so 3% of the loss.
  Transformer matmul = fixtures::random_model("qwen3");
  Transformer sdpa = fixtures::random_model("qwen3");
  matmul->set_attention_backend(Backend::kMatmul);
  sdpa->set_attention_backend(Backend::kSdpa);
  compat::AutocastGuard autocast(c10::DeviceType::CPU, true, torch::kBFloat16);
  const double l0 = loss_of(matmul).item<double>();
  torch::Tensor l1 = loss_of(sdpa);
  EXPECT_NEAR(l0, l1.item<double>(), 0.03 * std::abs(l0));
  l1.backward();  // differentiable through the casts
  for (const auto& p : sdpa->parameters()) EXPECT_TRUE(p.grad().defined());
}
