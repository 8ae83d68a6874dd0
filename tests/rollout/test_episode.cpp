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

// Issue 4: the KV cache persists across turns. A policy biased towards <|im_end|> (so turns end and
// the environment is stepped several times) plays the same episodes with the persistent cache and
// with full re-prefill every turn (same seed): sampled tokens, masks and turns are equal and the
// per-token logprobs agree within 1e-5; the rollout logprobs equal a teacher-forced recompute.
TEST(Episode, PersistentKvCacheEqualsFullReprefillOverManyTurns) {
  fixtures::TinyPolicy p = fixtures::make_tiny_policy(5);
  {
    // Every embedding gets a constant first component, <|im_end|> a larger one: the (tied) output
    // projection then favours <|im_end|> by ~h0 * 1.0 nats at every position.
    torch::NoGradGuard ng;
    torch::Tensor e = p.model->named_parameters()["model.embed_tokens.weight"];
    e.select(1, 0).fill_(1.0);
    e[p.chat->eos_id()][0] = 2.0;
  }
  envsandbox::EnvServer server;
  const std::string gcd = read_file(fixtures::seed_env_path("math/gcd.py"));
  rollout::EpisodeOptions o;
  o.sampling.temperature = 1.0;
  o.sampling.top_k = 0;
  o.sampling.top_p = 1.0;
  o.sampling.max_new_tokens = 8;
  o.max_turns = 5;
  o.context_tokens = 2048;
  o.max_batch = 2;  // continuous batching across episodes
  std::vector<rollout::EpisodeSpec> specs = {
      {"gcd", "math", gcd, 0, ""}, {"gcd", "math", gcd, 1, "hint"}, {"gcd", "math", gcd, 2, ""}};
  auto cached = rollout::play_episodes(p.ref(), server, specs, o, 7);
  o.persistent_kv_cache = false;
  auto reprefill = rollout::play_episodes(p.ref(), server, specs, o, 7);
  ASSERT_EQ(cached.size(), reprefill.size());
  int turns = 0;
  for (size_t i = 0; i < cached.size(); ++i) {
    const rollout::Sample &a = cached[i].sample, &b = reprefill[i].sample;
    ASSERT_TRUE(cached[i].failure.empty()) << cached[i].failure;
    EXPECT_EQ(a.tokens, b.tokens) << i;
    EXPECT_EQ(a.loss_mask, b.loss_mask) << i;
    EXPECT_EQ(cached[i].turns, reprefill[i].turns) << i;
    EXPECT_EQ(cached[i].actions, reprefill[i].actions) << i;
    EXPECT_EQ(cached[i].truncated, reprefill[i].truncated) << i;
    ASSERT_EQ(a.rollout_logprobs.size(), b.rollout_logprobs.size());
    for (size_t t = 0; t < a.rollout_logprobs.size(); ++t) EXPECT_NEAR(a.rollout_logprobs[t], b.rollout_logprobs[t], 1e-5) << i << "," << t;
    turns += cached[i].turns;

    // Teacher-forced recompute of the whole multi-turn sequence.
    torch::NoGradGuard ng;
    const int64_t T = a.tokens.size();
    torch::Tensor ids = torch::tensor(a.tokens, torch::kLong).unsqueeze(0);
    torch::Tensor logits = p.model->lm_head(p.model->forward(ids, torch::arange(T, torch::kLong).unsqueeze(0)))[0];
    torch::Tensor lp = policy::token_logprobs(logits.slice(0, 0, T - 1), ids[0].slice(0, 1, T), 1.0);
    for (int64_t t = 1; t < T; ++t)
      if (a.loss_mask[t] > 0) {
        EXPECT_NEAR(lp[t - 1].item<float>(), a.rollout_logprobs[t], 1e-5) << i << "," << t;
      }
  }
  EXPECT_GE(turns, 6) << "the biased policy should play several turns per episode";
}
