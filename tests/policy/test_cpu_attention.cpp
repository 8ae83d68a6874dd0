// policy/cpu_attention.h (the decode-step attention kernel) against a plain double-precision
// evaluation of the same formula, softmax(scale * q k^T) v with masked slots excluded, written here
// from the definition (HF modeling_llama eager_attention_forward), and its exp against std::exp. Every
// ISA variant this CPU runs is checked (base SSE2 / AVX2+FMA / AVX-512F on x86-64), plus the
// dispatched entry points.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "policy/cpu_attention.h"

using namespace spade::policy;

namespace {

// out[g, d] in double: for each row, scores over the attended slots, max-subtracted exp, normalised.
std::vector<double> naive_attention(const std::vector<float>& q, const std::vector<float>& k, const std::vector<float>& v,
                                    const std::vector<char>& mask, int64_t g, int64_t d, int64_t S, double scale) {
  std::vector<double> out(g * d, 0.0);
  for (int64_t r = 0; r < g; ++r) {
    std::vector<double> s(S, -std::numeric_limits<double>::infinity());
    double m = -std::numeric_limits<double>::infinity();
    for (int64_t t = 0; t < S; ++t) {
      if (!mask.empty() && !mask[t] && t != S - 1) continue;
      double dot = 0;
      for (int64_t c = 0; c < d; ++c) dot += static_cast<double>(q[r * d + c]) * k[t * d + c];
      s[t] = dot * scale;
      m = std::max(m, s[t]);
    }
    double z = 0;
    for (int64_t t = 0; t < S; ++t) z += std::isinf(s[t]) ? 0.0 : std::exp(s[t] - m);
    for (int64_t t = 0; t < S; ++t) {
      if (std::isinf(s[t])) continue;
      const double p = std::exp(s[t] - m) / z;
      for (int64_t c = 0; c < d; ++c) out[r * d + c] += p * v[t * d + c];
    }
  }
  return out;
}

}  // namespace

// Query groups of 1-8 rows (GQA ratios of llama/qwen models), head dims with and without a scalar tail,
// contexts from one slot up, with and without a padding mask (whose last slot is attended regardless),
// with padding in front (a short row in a batch of longer ones, which the kernel skips) and without.
TEST(CpuAttention, MatchesDoublePrecisionDefinition) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<std::string> isas = cpu::testing::isa_variants();
  isas.push_back("dispatched");
  for (const std::string& isa : isas) {
  std::mt19937 rng(7);
  for (int64_t g : {1, 2, 3, 8})
    for (int64_t d : {8, 40, 64, 128})
      for (int64_t S : {1, 17, 300})
        for (int masking : {0, 1, 2}) {  // none | every third slot padded | leading padding too
          const bool masked = masking > 0;
          std::vector<float> q(g * d), k(S * d), v(S * d), scores(g * S), out(g * d, -1.0f);
          for (float& x : q) x = 2.0f * normal(rng);  // wide score range: peaked and flat rows
          for (float& x : k) x = normal(rng);
          for (float& x : v) x = normal(rng);
          std::vector<char> mask;
          if (masked) {
            mask.resize(S);
            for (int64_t t = 0; t < S; ++t) mask[t] = (t % 3 != 1) && (masking == 1 || t >= S / 2);
            mask[S - 1] = 0;  // the newest slot counts even when the mask says otherwise
          }
          std::unique_ptr<bool[]> mb(new bool[S]);
          for (int64_t t = 0; t < S; ++t) mb[t] = masked ? mask[t] != 0 : true;
          const double scale = 1.0 / std::sqrt(static_cast<double>(d));
          if (isa == "dispatched")
            cpu::attend_group(q.data(), k.data(), v.data(), masked ? mb.get() : nullptr, g, d, S,
                              static_cast<float>(scale), scores.data(), out.data());
          else
            cpu::testing::attend_group(isa, q.data(), k.data(), v.data(), masked ? mb.get() : nullptr, g, d, S,
                                       static_cast<float>(scale), scores.data(), out.data());
          const auto want = naive_attention(q, k, v, mask, g, d, S, scale);
          double worst = 0;
          for (int64_t i = 0; i < g * d; ++i) worst = std::max(worst, std::abs(out[i] - want[i]));
          EXPECT_LT(worst, 2e-5) << isa << " g=" << g << " d=" << d << " S=" << S << " masking=" << masking;
          // scores now holds each row's probabilities: masked slots exactly 0, rows summing to 1.
          for (int64_t r = 0; r < g; ++r) {
            double sum = 0;
            for (int64_t t = 0; t < S; ++t) {
              if (masked && !mask[t] && t != S - 1) {
                EXPECT_EQ(scores[r * S + t], 0.0f);
              }
              sum += scores[r * S + t];
            }
            EXPECT_NEAR(sum, 1.0, 1e-5) << isa;
          }
        }
  }
}

// The vectorised exp of every variant: within 3e-7 relative of std::exp (evaluated in double) over the
// whole normal range of results, at any position (n = 1000 and n = 1..17 cover the padded tail), exactly
// 0 below exp's normal range and for -inf (masked attention slots), 1 at 0, +inf above log(FLT_MAX),
// NaN for NaN.
TEST(CpuAttention, ExpMatchesStdExp) {
  const float inf = std::numeric_limits<float>::infinity();
  const float last_finite = 88.72283172607421875f;  // the largest float whose exp is finite
  ASSERT_TRUE(std::isfinite(std::exp(last_finite)));
  ASSERT_TRUE(std::isinf(std::exp(std::nextafter(last_finite, inf))));
  std::vector<float> x;
  for (double a = -87.0; a <= 88.7; a += 0.0137) x.push_back(static_cast<float>(a));
  for (float a : {0.0f, -0.0f, 1e-8f, -1e-8f, 0.3465736f, -0.3465736f, 88.3f, 88.5f, last_finite})
    x.push_back(a);
  for (const std::string& isa : cpu::testing::isa_variants()) {
    for (size_t n : {x.size(), size_t{1}, size_t{3}, size_t{17}}) {
      std::vector<float> in(x.end() - n, x.end()), y(n);
      cpu::testing::exp_f32(isa, in.data(), static_cast<int64_t>(n), y.data());
      double worst = 0;
      for (size_t i = 0; i < n; ++i) {
        const double want = std::exp(static_cast<double>(in[i]));
        worst = std::max(worst, std::abs(y[i] - want) / want);
      }
      EXPECT_LT(worst, 3e-7) << isa << " n=" << n;
    }
    std::vector<float> edge(37, -100.0f), out(37, 1.0f);
    edge[3] = -inf;
    edge[20] = -87.5f;
    edge[36] = -90.0f;  // in the tail
    cpu::testing::exp_f32(isa, edge.data(), 37, out.data());
    for (float o : out) EXPECT_EQ(o, 0.0f) << isa;
    std::vector<float> big = {std::nextafter(last_finite, inf), 89.0f, 100.0f, inf, 0.0f,
                              std::numeric_limits<float>::quiet_NaN()};
    cpu::testing::exp_f32(isa, big.data(), 6, big.data());
    for (int i = 0; i < 4; ++i) EXPECT_EQ(big[i], inf) << isa << " " << i;
    EXPECT_EQ(big[4], 1.0f) << isa;
    EXPECT_TRUE(std::isnan(big[5])) << isa;
  }
}

// softmax_inplace: the probabilities of a row with -inf entries, compared with the definition.
TEST(CpuAttention, SoftmaxWithInfinities) {
  const float ninf = -std::numeric_limits<float>::infinity();
  const std::vector<float> in = {1.0f, ninf, 3.0f, 0.5f, -2.0f, 7.0f, 7.0f, 0.0f, 1.0f,
                                 2.0f, 3.0f, 4.0f, 5.0f, 6.0f, 7.0f, 8.0f, -1.0f, ninf};
  double z = 0;
  for (float a : in) z += std::isinf(a) ? 0.0 : std::exp(static_cast<double>(a) - 8.0);
  for (const std::string& isa : cpu::testing::isa_variants()) {
    std::vector<float> s = in;
    cpu::testing::softmax_inplace(isa, s.data(), static_cast<int64_t>(s.size()));
    for (size_t i = 0; i < s.size(); ++i) {
      const double want = std::isinf(in[i]) ? 0.0 : std::exp(static_cast<double>(in[i]) - 8.0) / z;
      EXPECT_NEAR(s[i], want, 1e-7) << isa << " " << i;
    }
    EXPECT_EQ(s[1], 0.0f) << isa;
    EXPECT_EQ(s.back(), 0.0f) << isa;
  }
  EXPECT_THROW(cpu::testing::softmax_inplace("avx1024", nullptr, 0), std::invalid_argument);
}
