// Sampler: greedy == argmax of a full forward; rollout logprobs == teacher-forced token_logprobs
// (TIS ratio 1); top-k 1 == greedy; stop tokens; determinism; batching independence; draws follow the
// filtered softmax. Each for both draw backends (the CPU's host loop and CUDA's tensor ops), and for
// CUDA's whole decode path (tensor draws, decode steps through policy::DecodeGraph's fixed-shape step).
// Plus a disabled throughput benchmark.
#include <ATen/Parallel.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <chrono>

#include "common/error.h"
#include "rollout/sampler.h"
#include "tests/testing/random_model.h"

using namespace spade;
using policy::ModelConfig;
using policy::Transformer;
using rollout::FinishReason;
using rollout::generate;
using rollout::SamplingParams;

namespace {

Transformer model(const std::string& type = "qwen3") { return fixtures::random_model(type); }

const std::vector<std::vector<int64_t>> kPrompts = {{1, 5, 9}, {2, 3, 4, 5, 6, 7, 8}, {30}, {12, 13, 14, 15}, {7, 7}};

// Teacher-forced logits for prompt + tokens: [len(tokens), V], row i predicts tokens[i].
torch::Tensor teacher_forced(Transformer& m, const std::vector<int64_t>& prompt, const std::vector<int64_t>& tokens) {
  torch::NoGradGuard ng;
  std::vector<int64_t> seq = prompt;
  seq.insert(seq.end(), tokens.begin(), tokens.end());
  const int64_t n = seq.size();
  auto h = m->forward(torch::tensor(seq).view({1, n}), torch::arange(n).view({1, n}));
  return m->lm_head(h[0]).narrow(0, prompt.size() - 1, tokens.size());
}

}  // namespace

// Every test below runs with both draw backends: the host loop (what CPU sampling uses) and the tensor
// ops (what CUDA sampling uses, here run on CPU tensors): SamplingParams::Backend; and once more with
// the tensor ops and decode steps through DecodeGraph (SamplingParams::decode_graph kOn: on a CPU its
// fixed-shape step runs eagerly; on CUDA the same step is what the graph replays).
struct DrawPath {
  SamplingParams::Backend backend;
  SamplingParams::DecodeGraphMode graph;
  const char* name;
};
void PrintTo(const DrawPath& p, std::ostream* os) { *os << p.name; }  // stable test names (no pointer bytes)

class SamplerDraws : public ::testing::TestWithParam<DrawPath> {
 protected:
  SamplingParams params() const {
    SamplingParams p;
    p.backend = GetParam().backend;
    p.decode_graph = GetParam().graph;
    return p;
  }
};

TEST_P(SamplerDraws, GreedyEqualsArgmaxOfFullForward) {
  Transformer m = model();
  SamplingParams p = params();
  p.temperature = 0;
  p.max_new_tokens = 12;
  auto res = generate(m, kPrompts, p, /*seed=*/1, /*max_batch=*/2);  // 2 slots: exercises continuous batching
  ASSERT_EQ(res.size(), kPrompts.size());
  for (size_t i = 0; i < kPrompts.size(); ++i) {
    ASSERT_EQ(res[i].tokens.size(), 12u);
    EXPECT_EQ(res[i].finish_reason, FinishReason::kLength);
    auto logits = teacher_forced(m, kPrompts[i], res[i].tokens);
    auto am = logits.argmax(-1);
    for (size_t t = 0; t < res[i].tokens.size(); ++t) EXPECT_EQ(res[i].tokens[t], am[t].item<int64_t>()) << i << "," << t;
    // Greedy logprobs are at temperature 1.
    auto lp = policy::token_logprobs(logits, torch::tensor(res[i].tokens), 1.0);
    for (size_t t = 0; t < res[i].tokens.size(); ++t) EXPECT_NEAR(res[i].logprobs[t], lp[t].item<float>(), 1e-5);
  }
}

TEST_P(SamplerDraws, LogprobsMatchTeacherForcedSoTisRatioIsOne) {
  for (std::string type : {"llama", "qwen2", "qwen3"}) {
    Transformer m = model(type);
    SamplingParams p = params();  // defaults: T 0.6, top-p 0.95, top-k 20 (SPADE reference §5)
    p.max_new_tokens = 16;
    auto res = generate(m, kPrompts, p, 42, /*max_batch=*/3);
    for (size_t i = 0; i < kPrompts.size(); ++i) {
      auto logits = teacher_forced(m, kPrompts[i], res[i].tokens);
      // The trainer's recomputation: same function, same (unfiltered) temperature-scaled distribution.
      auto lp = policy::token_logprobs(logits, torch::tensor(res[i].tokens), p.temperature);
      for (size_t t = 0; t < res[i].tokens.size(); ++t) {
        const double ratio = std::exp(lp[t].item<double>() - res[i].logprobs[t]);
        EXPECT_NEAR(ratio, 1.0, 1e-5) << type << " prompt " << i << " token " << t;
      }
    }
  }
}

TEST_P(SamplerDraws, TopK1EqualsGreedyAndSeedsAreDeterministic) {
  Transformer m = model();
  SamplingParams greedy = params();
  greedy.temperature = 0;
  greedy.max_new_tokens = 10;
  SamplingParams k1 = greedy;
  k1.temperature = 0.8;
  k1.top_k = 1;
  auto g = generate(m, kPrompts, greedy, 1);
  auto a = generate(m, kPrompts, k1, 123);
  for (size_t i = 0; i < kPrompts.size(); ++i) EXPECT_EQ(a[i].tokens, g[i].tokens);

  SamplingParams s = params();
  s.temperature = 1.0;
  s.top_k = 0;
  s.top_p = 1.0;
  s.max_new_tokens = 10;
  auto x = generate(m, kPrompts, s, 7), y = generate(m, kPrompts, s, 7), z = generate(m, kPrompts, s, 8);
  bool any_diff = false;
  for (size_t i = 0; i < kPrompts.size(); ++i) {
    EXPECT_EQ(x[i].tokens, y[i].tokens);
    EXPECT_EQ(x[i].logprobs, y[i].logprobs);
    any_diff |= x[i].tokens != z[i].tokens;
  }
  EXPECT_TRUE(any_diff);
  // Each prompt has its own random stream: batching does not change what is sampled.
  auto solo = generate(m, kPrompts, s, 7, /*max_batch=*/1);
  for (size_t i = 0; i < kPrompts.size(); ++i) EXPECT_EQ(solo[i].tokens, x[i].tokens) << i;
}

TEST_P(SamplerDraws, StopsOnStopTokenAndKeepsIt) {
  Transformer m = model();
  SamplingParams p = params();
  p.temperature = 0;
  p.max_new_tokens = 12;
  auto g = generate(m, kPrompts, p, 1);
  // Use the 3rd greedy token of prompt 1 as the stop token: prompt 1 must stop right there.
  const int64_t stop = g[1].tokens[2];
  p.stop_token_ids = {stop};
  auto s = generate(m, kPrompts, p, 1);
  for (size_t i = 0; i < kPrompts.size(); ++i) {
    auto it = std::find(g[i].tokens.begin(), g[i].tokens.end(), stop);
    if (it == g[i].tokens.end()) {
      EXPECT_EQ(s[i].finish_reason, FinishReason::kLength);
      EXPECT_EQ(s[i].tokens, g[i].tokens);
    } else {
      EXPECT_EQ(s[i].finish_reason, FinishReason::kStop);
      EXPECT_EQ(s[i].tokens, std::vector<int64_t>(g[i].tokens.begin(), it + 1));
      EXPECT_EQ(s[i].tokens.back(), stop);
      EXPECT_EQ(s[i].logprobs.size(), s[i].tokens.size());
    }
  }
  EXPECT_EQ(s[1].tokens.size(), std::min<size_t>(3, s[1].tokens.size()));
}

TEST_P(SamplerDraws, TopPAndMinPKeepOnlyLikelyTokens) {
  Transformer m = model();
  SamplingParams p = params();
  p.temperature = 1.0;
  p.top_k = 0;
  p.top_p = 0.3;
  p.max_new_tokens = 8;
  auto r = generate(m, kPrompts, p, 5);
  for (size_t i = 0; i < kPrompts.size(); ++i) {
    auto logits = teacher_forced(m, kPrompts[i], r[i].tokens);
    auto probs = torch::softmax(logits, -1);
    for (size_t t = 0; t < r[i].tokens.size(); ++t) {
      // A token survives top-p only if the mass of strictly more likely tokens is < top_p.
      auto pt = probs[t][r[i].tokens[t]].item<float>();
      double before = probs[t].masked_select(probs[t] > pt).sum().item<double>();
      EXPECT_LT(before, 0.3 + 1e-6);
    }
  }
  p.top_p = 1.0;
  p.min_p = 1.0;  // only the argmax survives -> greedy
  SamplingParams g = p;
  g.temperature = 0;
  g.min_p = 0;
  auto a = generate(m, kPrompts, p, 5), b = generate(m, kPrompts, g, 5);
  for (size_t i = 0; i < kPrompts.size(); ++i) EXPECT_EQ(a[i].tokens, b[i].tokens);
}

// Top-k: every draw is one of the k highest teacher-forced logits (rank = number of strictly larger
// logits < k), and at a high temperature not always the first (the draw is random among them).
TEST_P(SamplerDraws, TopKDrawsOnlyAmongTheKMostLikely) {
  Transformer m = model();
  SamplingParams p = params();
  p.temperature = 3.0;
  p.top_k = 3;
  p.top_p = 1.0;
  p.max_new_tokens = 12;
  auto r = generate(m, kPrompts, p, 17);
  bool any_not_first = false;
  for (size_t i = 0; i < kPrompts.size(); ++i) {
    auto logits = teacher_forced(m, kPrompts[i], r[i].tokens);
    for (size_t t = 0; t < r[i].tokens.size(); ++t) {
      const float own = logits[t][r[i].tokens[t]].item<float>();
      const int64_t rank = (logits[t] > own).sum().item<int64_t>();
      EXPECT_LT(rank, 3) << "prompt " << i << " token " << t;
      any_not_first |= rank > 0;
    }
  }
  EXPECT_TRUE(any_not_first);
}

// Sampling without filters (top-k off, top-p 1, min-p 0: the host path draws in id order without
// sorting) and with a top-p filter (the candidates sorted lazily) draw from the right distribution:
// the first new token of 4000 rows with the same prompt (each row its own random stream), against
// softmax(logits / T) of the teacher-forced logits, computed here with ATen (renormalised over the
// top-p nucleus for the filtered case). Every token's frequency is within 4.5 standard errors of its
// probability (a fixed seed: deterministic); tokens outside the nucleus never appear.
TEST_P(SamplerDraws, UnfilteredAndTopPDrawsFollowTheSoftmax) {
  Transformer m = model();
  const std::vector<int64_t> prompt = {3, 1, 4, 1, 5};
  const int n = 4000;
  torch::Tensor logits;
  {
    torch::NoGradGuard ng;
    auto h = m->forward(torch::tensor(prompt).view({1, 5}), torch::arange(5).view({1, 5}));
    logits = m->lm_head(h[0][4]).to(torch::kDouble);
  }
  for (double top_p : {1.0, 0.8}) {
    SamplingParams p = params();
    p.temperature = 1.5;  // flatten: many tokens get a visible share
    p.top_k = 0;
    p.top_p = top_p;
    p.max_new_tokens = 1;
    auto want = torch::softmax(logits / p.temperature, -1);
    if (top_p < 1) {  // nucleus: tokens whose strictly-more-likely mass is < top_p
      auto keep = torch::zeros_like(want);
      for (int64_t v = 0; v < want.size(0); ++v)
        keep[v] = want.masked_select(want > want[v]).sum().item<double>() < top_p ? 1.0 : 0.0;
      want = want * keep;
      want = want / want.sum();
    }
    auto r = generate(m, std::vector<std::vector<int64_t>>(n, prompt), p, 2024, /*max_batch=*/256);
    std::vector<int> count(want.size(0), 0);
    for (const auto& g : r) ++count.at(g.tokens.at(0));
    int seen = 0;
    for (int64_t v = 0; v < want.size(0); ++v) {
      const double pv = want[v].item<double>(), f = static_cast<double>(count[v]) / n;
      if (pv == 0) {
        EXPECT_EQ(count[v], 0) << "token " << v << " is outside the top-p nucleus";
        continue;
      }
      EXPECT_LE(std::abs(f - pv), 4.5 * std::sqrt(pv * (1 - pv) / n) + 1e-9)
          << "top_p " << top_p << " token " << v << ": frequency " << f << " vs probability " << pv;
      seen += count[v] > 0;
    }
    EXPECT_GT(seen, 5) << "the draws should spread over many tokens at temperature 1.5";
  }
}

INSTANTIATE_TEST_SUITE_P(
    Backends, SamplerDraws,
    ::testing::Values(DrawPath{SamplingParams::Backend::kHost, SamplingParams::DecodeGraphMode::kOff, "host"},
                      DrawPath{SamplingParams::Backend::kTensor, SamplingParams::DecodeGraphMode::kOff, "tensor"},
                      DrawPath{SamplingParams::Backend::kTensor, SamplingParams::DecodeGraphMode::kOn, "tensor_graph"}),
    [](const ::testing::TestParamInfo<DrawPath>& info) { return std::string(info.param.name); });

TEST(Sampler, RejectsBadInput) {
  Transformer m = model();
  SamplingParams p;
  EXPECT_THROW(generate(m, {{}}, p, 1), spade::Error);
  p.top_p = 0;
  EXPECT_THROW(generate(m, {{1}}, p, 1), spade::Error);
  p = SamplingParams();
  p.max_new_tokens = 0;
  auto r = generate(m, {{1, 2}}, p, 1);
  EXPECT_TRUE(r[0].tokens.empty());
  EXPECT_EQ(r[0].finish_reason, FinishReason::kLength);
}

// Throughput benchmark (--gtest_also_run_disabled_tests): ~3.4M-parameter model, 16 prompts of 64
// tokens, 128 new tokens each, batch 16.
TEST(Bench, DISABLED_GenerateBatch16) {
  ModelConfig c;
  c.model_type = "qwen3"; c.vocab_size = 4096; c.hidden_size = 256; c.intermediate_size = 512;
  c.num_hidden_layers = 4; c.num_attention_heads = 4; c.num_key_value_heads = 2; c.head_dim = 64;
  c.rope_theta = 1e6; c.tie_word_embeddings = true; c.qk_norm = true;
  Transformer m(c);
  m->init_weights(1);
  std::vector<std::vector<int64_t>> prompts(16);
  for (int i = 0; i < 16; ++i)
    for (int t = 0; t < 64; ++t) prompts[i].push_back((i * 131 + t * 17) % c.vocab_size);
  SamplingParams p;
  p.max_new_tokens = 128;
  generate(m, {prompts[0]}, p, 0);  // warm-up
  auto t0 = std::chrono::steady_clock::now();
  auto res = generate(m, prompts, p, 1, 16);
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  size_t n = 0;
  for (auto& r : res) n += r.tokens.size();
  std::printf("params %lld, threads %d: generate %zu tokens in %.2f s = %.0f tokens/s (batch 16, prompt 64)\n",
              (long long)c.num_parameters(), at::get_num_threads(), n, s, n / s);
}
