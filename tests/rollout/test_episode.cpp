// Multi-turn episodes, token-in/token-out (DESIGN.md Tokens; reference §3): a random tiny policy plays
// a seed environment in the sandbox. Invariants checked: lengths, loss mask only on sampled tokens,
// the prompt rendered exactly by the chat template, rollout logprobs equal to a teacher-forced
// recompute (so on-policy TIS ratios are 1), and the reference's ending rules.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "common/atomic_file.h"
#include "envsandbox/sandbox.h"
#include "rollout/episode.h"
#include "tests/testing/tiny_policy.h"

using namespace spade;

TEST(Episode, TokenInTokenOutInvariants) {
  fixtures::TinyPolicy p = fixtures::make_tiny_policy(3);
  envsandbox::EnvServer server;
  const std::string code = read_file(fixtures::seed_env_path("math/gcd.py"));
  rollout::EpisodeOptions o;
  o.sampling.temperature = 1.0;
  o.sampling.top_k = 0;
  o.sampling.top_p = 1.0;
  o.sampling.max_new_tokens = 6;
  o.max_turns = 3;
  o.context_tokens = 2048;
  std::vector<rollout::EpisodeSpec> specs = {{"gcd", "math", code, 0, ""}, {"gcd", "math", code, 1, "hint"}};
  auto results = rollout::play_episodes(p.ref(), server, specs, o, 42);
  ASSERT_EQ(results.size(), 2u);
  for (const rollout::EpisodeResult& r : results) {
    ASSERT_TRUE(r.failure.empty()) << r.failure;
    const rollout::Sample& s = r.sample;
    ASSERT_EQ(s.tokens.size(), s.loss_mask.size());
    ASSERT_EQ(s.tokens.size(), s.rollout_logprobs.size());
    EXPECT_GE(r.turns, 1);
    EXPECT_LE(r.turns, 3);
    EXPECT_GT(s.num_trainable(), 0);
    // A random policy rarely ends a turn with <|im_end|> within 6 tokens: then the episode is
    // truncated without stepping (reference §3); otherwise it ran out of turns or terminated.
    EXPECT_TRUE(r.truncated || r.terminated);
    if (!r.terminated) {
      EXPECT_EQ(r.reward, 0.0);
    }
  }
  // The first tokens are exactly the rendered first turn, all with mask 0.
  const std::string obs0 = "Find the greatest common divisor";
  const rollout::Sample& s0 = results[0].sample;
  size_t prompt_len = 0;
  while (prompt_len < s0.loss_mask.size() && s0.loss_mask[prompt_len] == 0) ++prompt_len;
  const std::string prompt_text = p.tokenizer.decode(std::vector<int64_t>(s0.tokens.begin(), s0.tokens.begin() + prompt_len));
  EXPECT_NE(prompt_text.find(obs0), std::string::npos) << prompt_text;
  EXPECT_NE(p.tokenizer.decode(results[1].sample.tokens).find("HINT: hint"), std::string::npos);

  // Teacher-forced logprobs of the sampled tokens equal the sampler's (temperature 1).
  torch::NoGradGuard ng;
  torch::Tensor ids = torch::tensor(s0.tokens, torch::kLong).unsqueeze(0);
  const int64_t T = ids.size(1);
  torch::Tensor pos = torch::arange(T, torch::kLong).unsqueeze(0);
  torch::Tensor logits = p.model->lm_head(p.model->forward(ids, pos))[0];
  torch::Tensor lp = policy::token_logprobs(logits.slice(0, 0, T - 1), ids[0].slice(0, 1, T), 1.0);
  for (int64_t t = 1; t < T; ++t)
    if (s0.loss_mask[t] > 0) {
      EXPECT_NEAR(lp[t - 1].item<float>(), s0.rollout_logprobs[t], 1e-4) << t;
    }
}

TEST(Episode, BrokenEnvironmentIsAFailureNotACrash) {
  fixtures::TinyPolicy p = fixtures::make_tiny_policy(3);
  envsandbox::EnvServer server;
  rollout::EpisodeOptions o;
  o.sampling.max_new_tokens = 4;
  std::vector<rollout::EpisodeSpec> specs = {{"bad", "math", "this is not python", 0, ""}};
  auto results = rollout::play_episodes(p.ref(), server, specs, o, 1);
  ASSERT_EQ(results.size(), 1u);
  EXPECT_FALSE(results[0].failure.empty());
  EXPECT_TRUE(results[0].sample.tokens.empty());
}
