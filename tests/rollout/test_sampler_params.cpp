// SamplingParams validation against hostile values, for both draw backends: a NaN, infinite or tiny
// positive temperature used to pass validate() and give NaN logprobs (host loop: logits / 1e-40
// overflows float to inf, inf - inf = NaN) or a c10::Error from policy::token_logprobs (tensor path,
// NaN temperature) instead of a spade::Error.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <limits>

#include "common/error.h"
#include "rollout/sampler.h"
#include "tests/testing/random_model.h"

using namespace spade;
using rollout::SamplingParams;

class SamplerParams : public ::testing::TestWithParam<SamplingParams::Backend> {};

TEST_P(SamplerParams, RejectsNonFiniteOrTinyTemperature) {
  policy::Transformer m = fixtures::random_model("qwen3");
  for (double t : {std::nan(""), std::numeric_limits<double>::infinity(), 1e-40, 1e-300, 1e-6}) {
    SamplingParams p;
    p.backend = GetParam();
    p.temperature = t;
    p.max_new_tokens = 2;
    EXPECT_THROW(rollout::generate(m, {{1, 5, 9}}, p, 3), spade::Error) << "temperature " << t;
  }
}

// The smallest accepted temperature (1e-5, vLLM's _SAMPLING_EPS) and greedy (0, also -0.0) still give
// finite logprobs equal to policy::token_logprobs of a teacher-forced forward (the trainer's formula;
// greedy at temperature 1), and temperature 1e-5 draws the argmax (checked below: the runner-up logit
// is more than 1e-3 lower, so at 1e-5 its probability is below e^-100).
TEST_P(SamplerParams, SmallestTemperatureAndGreedyStayFinite) {
  policy::Transformer m = fixtures::random_model("qwen3");
  const std::vector<int64_t> prompt = {1, 5, 9};
  for (double t : {1e-5, 0.0, -0.0}) {
    SamplingParams p;
    p.backend = GetParam();
    p.temperature = t;
    p.max_new_tokens = 4;
    const auto res = rollout::generate(m, {prompt}, p, 3);
    ASSERT_EQ(res[0].tokens.size(), 4u);
    std::vector<int64_t> seq = prompt;
    seq.insert(seq.end(), res[0].tokens.begin(), res[0].tokens.end());
    torch::NoGradGuard ng;
    const int64_t n = seq.size();
    auto h = m->forward(torch::tensor(seq).view({1, n}), torch::arange(n).view({1, n}));
    auto logits = m->lm_head(h[0]).narrow(0, prompt.size() - 1, res[0].tokens.size());
    auto lp = policy::token_logprobs(logits, torch::tensor(res[0].tokens), t == 0 ? 1.0 : t);
    for (size_t i = 0; i < res[0].tokens.size(); ++i) {
      auto top2 = std::get<0>(logits[i].topk(2));
      ASSERT_GT((top2[0] - top2[1]).item<double>(), 1e-3);
      EXPECT_EQ(res[0].tokens[i], logits[i].argmax().item<int64_t>()) << t;
      EXPECT_TRUE(std::isfinite(res[0].logprobs[i])) << t;
      EXPECT_NEAR(res[0].logprobs[i], lp[i].item<float>(), 1e-5) << t;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, SamplerParams,
                         ::testing::Values(SamplingParams::Backend::kHost, SamplingParams::Backend::kTensor),
                         [](const ::testing::TestParamInfo<SamplingParams::Backend>& info) {
                           return std::string(info.param == SamplingParams::Backend::kHost ? "host" : "tensor");
                         });
