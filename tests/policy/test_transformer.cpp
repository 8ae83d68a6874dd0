// Transformer numerics: RMSNorm, RoPE, logprobs on hand-computed inputs; KV-cache, padding and GQA
// equivalences; HF parameter names. Plus a disabled throughput benchmark (training fwd+bwd).
#include <ATen/Parallel.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <chrono>
#include <cmath>
#include <set>

#include "common/error.h"
#include "policy/transformer.h"

using namespace spade::policy;

namespace {

// LibTorch defaults to 1 thread here; every test process uses both cores. (Set from a
// gtest environment: calling into ATen from a static initializer crashes.)
struct TorchThreads : ::testing::Environment {
  void SetUp() override { at::set_num_threads(2); }
};
::testing::Environment* const kThreads = ::testing::AddGlobalTestEnvironment(new TorchThreads);

ModelConfig tiny(const std::string& type, int64_t heads = 4, int64_t kv = 2) {
  ModelConfig c;
  c.model_type = type;
  c.vocab_size = 61;
  c.hidden_size = 32;
  c.intermediate_size = 48;
  c.num_hidden_layers = 2;
  c.num_attention_heads = heads;
  c.num_key_value_heads = kv;
  c.head_dim = type == "qwen3" ? 16 : 8;  // qwen3: explicit head_dim != hidden/heads
  c.rms_norm_eps = 1e-6;
  c.rope_theta = 10000;
  c.attention_bias = type == "qwen2";
  c.qk_norm = type == "qwen3";
  c.tie_word_embeddings = type != "llama";
  return c;
}

Transformer make(const ModelConfig& c, uint64_t seed = 7) {
  Transformer m(c);
  m->init_weights(seed, 0.2);  // large std: makes attention patterns non-trivial
  // Non-trivial norm weights and biases too, so they are exercised.
  torch::NoGradGuard ng;
  for (auto& p : m->named_parameters())
    if (p.key().find("norm") != std::string::npos || p.key().find("bias") != std::string::npos)
      p.value().add_(torch::randn(p.value().sizes()) * 0.1);
  return m;
}

torch::Tensor ids_of(std::vector<int64_t> v) { return torch::tensor(v, torch::kLong).view({1, -1}); }
torch::Tensor pos_range(int64_t from, int64_t n) { return torch::arange(from, from + n, torch::kLong).view({1, -1}); }

double max_diff(const torch::Tensor& a, const torch::Tensor& b) { return (a - b).abs().max().item<double>(); }

}  // namespace

TEST(RmsNorm, HandComputed) {
  // x = [1,2,3,4], mean(x^2) = 7.5, x/sqrt(7.5 + 1e-6) (computed with Python math), weight [1,1,1,2].
  auto y = rms_norm(torch::tensor({1.f, 2.f, 3.f, 4.f}), torch::tensor({1.f, 1.f, 1.f, 2.f}), 1e-6);
  const float expected[] = {0.36514835f, 0.73029669f, 1.09544504f, 2.92118678f};
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(y[i].item<float>(), expected[i], 1e-6);
}

TEST(RmsNorm, Bf16InputNormalisesInFp32ThenCasts) {
  auto x = torch::tensor({1.f, 2.f, 3.f, 4.f}).to(torch::kBFloat16);
  auto y = rms_norm(x, torch::ones({4}, torch::kBFloat16), 1e-6);
  EXPECT_EQ(y.scalar_type(), torch::kBFloat16);
  auto ref = (x.to(torch::kFloat) * std::sqrt(1.0 / 7.5)).to(torch::kBFloat16);
  EXPECT_TRUE(torch::equal(y, ref));
}

TEST(Rope, InvFreqIsThetaPowMinus2iOverD) {
  ModelConfig c = tiny("llama");
  c.head_dim = 4;
  c.num_attention_heads = 8;
  c.num_key_value_heads = 8;
  auto f = rope_inv_freq(c);
  ASSERT_EQ(f.size(0), 2);
  EXPECT_FLOAT_EQ(f[0].item<float>(), 1.0f);
  EXPECT_NEAR(f[1].item<float>(), 0.01f, 1e-8);  // 10000^(-2/4)
}

TEST(Rope, RotateHalfHandComputed) {
  // d = 4, theta = 1e4 -> inv_freq [1, 0.01]; x = [1,2,3,4] at position 1; rotate_half(x) = [-3,-4,1,2].
  // Expected (Python math): [1cos1-3sin1, 2cos.01-4sin.01, 3cos1+1sin1, 4cos.01+2sin.01].
  auto x = torch::tensor({1.f, 2.f, 3.f, 4.f}).view({1, 1, 1, 4});
  auto inv = torch::tensor({1.f, 0.01f});
  auto y = apply_rope(x, torch::tensor({1L}).view({1, 1}), inv).flatten();
  const double expected[] = {-1.98411065, 1.95990067, 2.46237790, 4.01979967};
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(y[i].item<float>(), expected[i], 1e-6);
  // Position 0 is the identity.
  EXPECT_TRUE(torch::allclose(apply_rope(x, torch::tensor({0L}).view({1, 1}), inv), x));
}

TEST(Rope, Llama3ScalingMatchesHfRule) {
  ModelConfig c = tiny("llama");
  c.num_attention_heads = 1; c.num_key_value_heads = 1; c.head_dim = 128; c.hidden_size = 128;
  c.rope_theta = 500000;
  auto plain = rope_inv_freq(c);
  c.rope_scaling.rope_type = "llama3";
  c.rope_scaling.factor = 8; c.rope_scaling.low_freq_factor = 1; c.rope_scaling.high_freq_factor = 4;
  c.rope_scaling.original_max_position_embeddings = 8192;
  auto scaled = rope_inv_freq(c);
  // HF _compute_llama3_parameters: wavelength < 8192/4 = 2048 kept; > 8192 divided by 8.
  EXPECT_FLOAT_EQ(scaled[0].item<float>(), plain[0].item<float>());
  EXPECT_NEAR(scaled[63].item<float>(), plain[63].item<float>() / 8, 1e-12);
}

TEST(TokenLogprobs, HandComputed) {
  auto logits = torch::tensor({1.f, 2.f, 3.f}).view({1, 3});
  auto tgt = torch::tensor({2L});
  // 3 - logsumexp(1,2,3) = -0.40760596; at T = 2: 1.5 - logsumexp(.5,1,1.5) = -0.68026967 (Python math).
  EXPECT_NEAR(token_logprobs(logits, tgt, 1.0).item<float>(), -0.40760596, 1e-6);
  EXPECT_NEAR(token_logprobs(logits, tgt, 2.0).item<float>(), -0.68026967, 1e-6);
  EXPECT_NEAR(token_entropy(logits, 1.0).item<float>(), 0.83239558, 1e-6);
  EXPECT_EQ(token_logprobs(logits.to(torch::kBFloat16), tgt, 1.0).scalar_type(), torch::kFloat);
}

TEST(Transformer, ParameterNamesAreHfNames) {
  for (std::string type : {"llama", "qwen2", "qwen3"}) {
    ModelConfig c = tiny(type);
    Transformer m(c);
    std::set<std::string> names;
    int64_t count = 0;
    for (const auto& p : m->named_parameters()) {
      names.insert(p.key());
      count += p.value().numel();
    }
    EXPECT_EQ(count, c.num_parameters()) << type;
    EXPECT_TRUE(names.count("model.embed_tokens.weight"));
    EXPECT_TRUE(names.count("model.layers.1.self_attn.o_proj.weight"));
    EXPECT_TRUE(names.count("model.layers.0.mlp.down_proj.weight"));
    EXPECT_TRUE(names.count("model.norm.weight"));
    EXPECT_EQ(names.count("lm_head.weight"), c.tie_word_embeddings ? 0u : 1u) << type;
    EXPECT_EQ(names.count("model.layers.0.self_attn.q_proj.bias"), type == "qwen2" ? 1u : 0u);
    EXPECT_EQ(names.count("model.layers.0.self_attn.o_proj.bias"), 0u);  // qwen2: q/k/v only
    EXPECT_EQ(names.count("model.layers.0.self_attn.k_norm.weight"), type == "qwen3" ? 1u : 0u);
  }
}

TEST(Transformer, TiedHeadSharesEmbeddingStorage) {
  Transformer m = make(tiny("qwen2"));
  auto h = torch::randn({2, 32});
  auto emb = m->named_parameters()["model.embed_tokens.weight"];
  EXPECT_TRUE(torch::allclose(m->lm_head(h), torch::matmul(h, emb.t()), 1e-6, 1e-6));
}

TEST(Transformer, KvCacheDecodeEqualsFullForward) {
  torch::NoGradGuard ng;
  for (std::string type : {"llama", "qwen2", "qwen3"}) {
    Transformer m = make(tiny(type));
    std::vector<int64_t> seq = {3, 17, 42, 5, 9, 60, 1, 33, 21, 8};
    const int64_t T = seq.size();
    auto full = m->lm_head(m->forward(ids_of(seq), pos_range(0, T)));  // [1, T, V]
    KVCache cache;
    const int64_t prefill = 4;
    auto part = m->lm_head(m->forward(ids_of({seq.begin(), seq.begin() + prefill}), pos_range(0, prefill), &cache));
    EXPECT_LT(max_diff(part, full.narrow(1, 0, prefill)), 1e-5) << type;
    for (int64_t t = prefill; t < T; ++t) {
      auto step = m->lm_head(m->forward(ids_of({seq[t]}), pos_range(t, 1), &cache));
      EXPECT_LT(max_diff(step, full.narrow(1, t, 1)), 1e-5) << type << " t=" << t;
    }
    EXPECT_EQ(cache.length(), T);
  }
}

TEST(Transformer, LeftPaddedBatchEqualsUnpaddedSequences) {
  torch::NoGradGuard ng;
  for (std::string type : {"llama", "qwen3"}) {
    Transformer m = make(tiny(type));
    std::vector<std::vector<int64_t>> seqs = {{4, 8, 15, 16, 23}, {42, 7, 1, 2, 3, 4, 5, 6}};
    const int64_t P = 8;
    auto ids = torch::zeros({2, P}, torch::kLong), pos = torch::zeros({2, P}, torch::kLong);
    auto mask = torch::zeros({2, P}, torch::kBool);
    for (int r = 0; r < 2; ++r) {
      const int64_t L = seqs[r].size(), off = P - L;
      ids[r].narrow(0, off, L).copy_(torch::tensor(seqs[r]));
      pos[r].narrow(0, off, L).copy_(torch::arange(L));
      mask[r].narrow(0, off, L).fill_(true);
    }
    KVCache cache;
    auto batch = m->lm_head(m->forward(ids, pos, &cache, mask));
    // One more decode step with the cache.
    auto next_ids = torch::tensor({11L, 12L}).view({2, 1});
    auto next_pos = torch::tensor({5L, 8L}).view({2, 1});
    mask = torch::cat({mask, torch::ones({2, 1}, torch::kBool)}, 1);
    auto step = m->lm_head(m->forward(next_ids, next_pos, &cache, mask));
    for (int r = 0; r < 2; ++r) {
      auto s = seqs[r];
      const int64_t L = s.size();
      s.push_back(next_ids[r][0].item<int64_t>());
      auto single = m->lm_head(m->forward(ids_of(s), pos_range(0, L + 1)));
      EXPECT_LT(max_diff(batch[r].narrow(0, P - L, L), single[0].narrow(0, 0, L)), 1e-5) << type << " row " << r;
      EXPECT_LT(max_diff(step[r][0], single[0][L]), 1e-5) << type << " row " << r;
    }
    EXPECT_FALSE(torch::isnan(batch).any().item<bool>());  // padding queries stay finite
  }
}

TEST(Transformer, GqaEqualsMhaWithRepeatedKvHeads) {
  // HF repeat_kv: kv head j serves query heads j*g .. j*g+g-1. An MHA model whose k/v weights repeat
  // each GQA kv head g times must give identical outputs.
  torch::NoGradGuard ng;
  ModelConfig g = tiny("llama", /*heads=*/4, /*kv=*/2);
  ModelConfig mha = g;
  mha.num_key_value_heads = 4;
  Transformer a = make(g), b(mha);
  auto pa = a->named_parameters(), pb = b->named_parameters();
  const int64_t d = g.head_size();
  for (const auto& p : pb) {
    const std::string& n = p.key();
    torch::Tensor src = pa[n];
    if (n.find("k_proj") != std::string::npos || n.find("v_proj") != std::string::npos)
      src = src.view({2, d, -1}).repeat_interleave(2, 0).reshape(p.value().sizes());
    p.value().copy_(src);
  }
  auto ids = ids_of({1, 2, 3, 4, 5, 6, 7});
  auto ya = a->forward(ids, pos_range(0, 7)), yb = b->forward(ids, pos_range(0, 7));
  EXPECT_LT(max_diff(ya, yb), 1e-5);
}

TEST(Transformer, BackwardReachesEveryParameter) {
  Transformer m = make(tiny("qwen3"));
  auto ids = ids_of({1, 2, 3, 4, 5});
  auto logits = m->lm_head(m->forward(ids, pos_range(0, 5)));
  auto lp = token_logprobs(logits.view({5, -1}), torch::tensor({2L, 3L, 4L, 5L, 6L}), 1.0);
  lp.sum().backward();
  for (const auto& p : m->named_parameters()) {
    ASSERT_TRUE(p.value().grad().defined()) << p.key();
    EXPECT_GT(p.value().grad().abs().sum().item<double>(), 0) << p.key();
  }
}

TEST(Transformer, InitWeightsIsDeterministic) {
  Transformer a(tiny("llama")), b(tiny("llama"));
  a->init_weights(5);
  b->init_weights(5);
  for (const auto& p : a->named_parameters()) EXPECT_TRUE(torch::equal(p.value(), b->named_parameters()[p.key()]));
}

// Throughput benchmark (run with --gtest_also_run_disabled_tests): training forward + backward on a
// ~3.4M-parameter model at batch 8 x 512 tokens.
TEST(Bench, DISABLED_TrainForwardBackward) {
  ModelConfig c;
  c.model_type = "qwen3"; c.vocab_size = 4096; c.hidden_size = 256; c.intermediate_size = 512;
  c.num_hidden_layers = 4; c.num_attention_heads = 4; c.num_key_value_heads = 2; c.head_dim = 64;
  c.rope_theta = 1e6; c.tie_word_embeddings = true; c.qk_norm = true;
  Transformer m(c);
  m->init_weights(1);
  auto ids = torch::randint(0, c.vocab_size, {8, 512}, torch::kLong);
  auto pos = torch::arange(512, torch::kLong).view({1, 512}).expand({8, 512}).contiguous();
  auto step = [&] {
    m->zero_grad();
    auto logits = m->lm_head(m->forward(ids, pos)).view({8 * 512, -1});
    token_logprobs(logits, ids.view({-1}), 1.0).mean().backward();
  };
  step();
  const int iters = 3;
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < iters; ++i) step();
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("params %lld, threads %d: train fwd+bwd %.0f tokens/s (%.3f s per 8x512 step)\n",
              (long long)c.num_parameters(), at::get_num_threads(), iters * 8 * 512 / s, s / iters);
}

// KVCache::write_row (continuous batching reuses a finished row's slot in place): the target row gets
// the source row right-aligned at the offset and zeros in front, every other row and the storage
// (storage_version, which a captured decode graph depends on) are untouched; bad shapes are errors.
TEST(KvCache, WriteRowReplacesOneRowInPlace) {
  torch::NoGradGuard ng;
  const auto layer = [](int64_t rows, int64_t cols, float base) {  // [rows, kv_heads 2, cols, head_dim 3]
    return torch::arange(rows * 2 * cols * 3, torch::kFloat).view({rows, 2, cols, 3}) + base;
  };
  KVCache batch, src;
  for (size_t l = 0; l < 2; ++l) {
    batch.append(l, layer(3, 5, 1000.0f * l), layer(3, 5, 1000.0f * l + 500));
    src.append(l, layer(2, 3, -100.0f * (l + 1)), layer(2, 3, -50.0f * (l + 1)));
  }
  KVCache before;
  for (size_t l = 0; l < 2; ++l) {
    auto [k, v] = batch.append(l, torch::zeros({3, 2, 0, 3}), torch::zeros({3, 2, 0, 3}));
    before.append(l, k.clone(), v.clone());
  }
  const uint64_t version = batch.storage_version();
  batch.write_row(1, src, 1, 2);  // source row 1 (3 columns) into row 1 at columns 2..4
  EXPECT_EQ(batch.storage_version(), version);
  EXPECT_EQ(batch.length(), 5);
  for (size_t l = 0; l < 2; ++l) {
    auto [k, v] = batch.append(l, torch::zeros({3, 2, 0, 3}), torch::zeros({3, 2, 0, 3}));
    auto [bk, bv] = before.append(l, torch::zeros({3, 2, 0, 3}), torch::zeros({3, 2, 0, 3}));
    auto [sk, sv] = src.append(l, torch::zeros({2, 2, 0, 3}), torch::zeros({2, 2, 0, 3}));
    for (int64_t r : {0, 2}) {
      EXPECT_TRUE(torch::equal(k[r], bk[r])) << "row " << r << " untouched";
      EXPECT_TRUE(torch::equal(v[r], bv[r])) << "row " << r << " untouched";
    }
    EXPECT_TRUE(torch::equal(k[1].narrow(1, 2, 3), sk[1]));
    EXPECT_TRUE(torch::equal(v[1].narrow(1, 2, 3), sv[1]));
    EXPECT_EQ(k[1].narrow(1, 0, 2).abs().sum().item<float>(), 0.0f);
    EXPECT_EQ(v[1].narrow(1, 0, 2).abs().sum().item<float>(), 0.0f);
  }
  EXPECT_THROW(batch.write_row(1, src, 0, 3), spade::Error);  // 3 columns at offset 3 overrun 5
  EXPECT_THROW(batch.write_row(3, src, 0, 0), spade::Error);  // no row 3
  EXPECT_THROW(batch.write_row(0, src, 2, 0), spade::Error);  // no source row 2
}
