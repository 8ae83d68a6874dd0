// The CPU decode kernel (TransformerImpl::decode_cpu, issue 4) against the generic ATen layer, which
// is the reference here: the generic path is itself checked against a plain-PyTorch HF-style forward
// (test_parity.cpp) and against the full forward without cache (test_transformer.cpp). Both paths run
// the same formulas in fp32, so they agree up to summation order (1e-5 absolute on hidden states of
// magnitude ~1).
#include <ATen/CPUGeneratorImpl.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "common/error.h"
#include "policy/transformer.h"

using namespace spade;
using policy::KVCache;
using policy::ModelConfig;
using policy::Transformer;

namespace {

ModelConfig config(const std::string& type, bool bias, int64_t head_dim = 8) {
  ModelConfig c;
  c.model_type = type;
  c.vocab_size = 61; c.hidden_size = 48; c.intermediate_size = 80; c.num_hidden_layers = 2;
  c.num_attention_heads = 6; c.num_key_value_heads = 2; c.head_dim = head_dim; c.rope_theta = 10000;
  c.rms_norm_eps = 1e-6; c.qk_norm = type == "qwen3"; c.attention_bias = bias; c.tie_word_embeddings = false;
  return c;
}

Transformer make(const ModelConfig& c) {
  Transformer m(c);
  m->init_weights(5, 0.2);  // large std: non-trivial attention patterns
  torch::NoGradGuard ng;     // init_weights zeroes biases: make them matter
  auto gen = at::detail::createCPUGenerator(9);
  for (auto& p : m->named_parameters())
    if (p.key().size() > 4 && p.key().substr(p.key().size() - 4) == "bias") p.value().normal_(0.0, 0.2, gen);
  return m;
}

double max_diff(const torch::Tensor& a, const torch::Tensor& b) { return (a - b).abs().max().item<double>(); }

// Three left-padded prompts (lengths 5, 9, 2) prefilled into `cache`; returns the key mask [3, 9].
torch::Tensor prefill(Transformer& m, KVCache& cache) {
  const std::vector<std::vector<int64_t>> prompts = {{4, 8, 15, 16, 23}, {42, 7, 1, 2, 3, 4, 5, 6, 9}, {30, 31}};
  const int64_t P = 9;
  auto ids = torch::zeros({3, P}, torch::kLong), pos = torch::zeros({3, P}, torch::kLong);
  auto mask = torch::zeros({3, P}, torch::kBool);
  for (int r = 0; r < 3; ++r) {
    const int64_t L = prompts[r].size(), off = P - L;
    ids[r].narrow(0, off, L).copy_(torch::tensor(prompts[r]));
    pos[r].narrow(0, off, L).copy_(torch::arange(L));
    mask[r].narrow(0, off, L).fill_(true);
  }
  m->forward(ids, pos, &cache, mask);
  return mask;
}

}  // namespace

// 80 decode steps (past the cache's 64 spare columns, so its storage grows mid-run) of a padded batch,
// kernel vs generic, for each family: llama (+ attention bias with o_proj bias), qwen2 (q/k/v bias),
// qwen3 (q/k RMSNorm); head_dim 8 runs the attention kernel's scalar tails only, 64 and 72 its 16-lane
// loops (with a tail for 72).
TEST(DecodeKernel, EqualsGenericPathOverManyStepsWithPadding) {
  torch::NoGradGuard ng;
  struct Case {
    std::string type;
    bool bias;
    int64_t head_dim;
  };
  for (auto [type, bias, head_dim] : {Case{"llama", false, 8}, Case{"llama", true, 8}, Case{"qwen2", true, 8},
                                      Case{"qwen3", false, 8}, Case{"qwen3", false, 64}, Case{"llama", true, 72}}) {
    Transformer m = make(config(type, bias, head_dim));
    KVCache fast, slow;
    torch::Tensor mask = prefill(m, fast);
    prefill(m, slow);
    auto next = torch::tensor({1L, 2L, 3L}).view({3, 1});
    auto pos = torch::tensor({5L, 9L, 2L}).view({3, 1});
    for (int step = 0; step < 80; ++step) {
      mask = torch::cat({mask, torch::ones({3, 1}, torch::kBool)}, 1);
      m->set_cpu_decode_kernel(true);
      ASSERT_TRUE(m->decode_cpu_applies(next, &fast)) << type;
      auto a = m->forward(next, pos, &fast, mask);
      m->set_cpu_decode_kernel(false);
      ASSERT_FALSE(m->decode_cpu_applies(next, &slow));
      auto b = m->forward(next, pos, &slow, mask);
      ASSERT_EQ(a.sizes(), b.sizes());
      ASSERT_LT(max_diff(a, b), 1e-5) << type << " bias " << bias << " head_dim " << head_dim << " step " << step;
      // Feed each row's greedy token next (keeps the inputs data-dependent, like sampling).
      next = m->lm_head(b.select(1, 0)).argmax(-1).view({3, 1});
      pos = pos + 1;
    }
    EXPECT_EQ(fast.length(), slow.length());
  }
}

// Without padding (no key mask) every cached slot is attended.
TEST(DecodeKernel, EqualsGenericPathWithoutKeyMask) {
  torch::NoGradGuard ng;
  Transformer m = make(config("qwen3", false));
  KVCache fast, slow;
  auto ids = torch::tensor({3L, 9L, 27L, 4L, 5L, 6L}).view({2, 3});
  auto pos = torch::arange(3, torch::kLong).repeat({2, 1});
  m->forward(ids, pos, &fast);
  m->forward(ids, pos, &slow);
  auto next = torch::tensor({7L, 8L}).view({2, 1});
  for (int64_t t = 3; t < 10; ++t) {
    auto p = torch::full({2, 1}, t, torch::kLong);
    m->set_cpu_decode_kernel(true);
    auto a = m->forward(next, p, &fast);
    m->set_cpu_decode_kernel(false);
    auto b = m->forward(next, p, &slow);
    ASSERT_LT(max_diff(a, b), 1e-5) << "t=" << t;
  }
}

// The kernel is used only where its numerics are the model's: not with grad mode on (training needs the
// autograd graph), not for bf16 weights, not for several new tokens or an empty cache.
TEST(DecodeKernel, AppliesOnlyToFp32NoGradSingleTokenDecode) {
  Transformer m = make(config("qwen3", false));
  KVCache cache, empty;
  {
    torch::NoGradGuard ng;
    m->forward(torch::tensor({1L, 2L}).view({1, 2}), torch::arange(2, torch::kLong).view({1, 2}), &cache);
  }
  auto one = torch::tensor({3L}).view({1, 1}), two = torch::tensor({3L, 4L}).view({1, 2});
  EXPECT_FALSE(m->decode_cpu_applies(one, &cache));  // grad mode on
  torch::NoGradGuard ng;
  EXPECT_TRUE(m->decode_cpu_applies(one, &cache));
  EXPECT_FALSE(m->decode_cpu_applies(two, &cache));
  EXPECT_FALSE(m->decode_cpu_applies(one, &empty));
  EXPECT_FALSE(m->decode_cpu_applies(one, nullptr));
  m->to(torch::kBFloat16);
  EXPECT_FALSE(m->decode_cpu_applies(one, &cache));
}

TEST(DecodeKernel, RejectsOutOfVocabularyToken) {
  torch::NoGradGuard ng;
  Transformer m = make(config("llama", false));
  KVCache cache;
  m->forward(torch::tensor({1L, 2L}).view({1, 2}), torch::arange(2, torch::kLong).view({1, 2}), &cache);
  EXPECT_THROW(m->forward(torch::tensor({61L}).view({1, 1}), torch::tensor({2L}).view({1, 1}), &cache), spade::Error);
}
