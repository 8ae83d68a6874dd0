// Issue 17: a NaN or infinite reward from an environment is refused where it enters and never spreads
// through a group's advantages. End to end: a policy that ends every turn at once plays four episodes of
// one environment (one group) whose single step() returns, by reset seed 0..3, the rewards 1.0, NaN,
// 1.0, +inf, terminated. The lenient wrapper refuses the NaN and inf answers as invalid game responses
// (reference §3: reward -1.0, terminated) with reason reward_not_finite, which the episode records as
// its failure. Expected by hand: episode rewards [1, -1, 1, -1] (episode_reward = clamp(last, -1, 1)
// when terminated); their group has mean 0 and Bessel std sqrt(4/3) = 1.1547005, so the actor
// advantages are +-1 / (1.1547005 + 1e-8) = +-0.8660254, all finite.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>

#include "envsandbox/sandbox.h"
#include "reward/advantages.h"
#include "rollout/episode.h"
#include "tests/testing/tiny_policy.h"

using namespace spade;

TEST(NonFiniteReward, RefusedAtTheBoundaryAndAdvantagesStayFinite) {
  // Greedy decoding picks <|im_end|> first: every embedding gets first component 1 and <|im_end|> 4, so
  // with tied weights its logit leads by ~3 x the normalised first component of the hidden state.
  fixtures::TinyPolicy p = fixtures::make_tiny_policy(5);
  {
    torch::NoGradGuard ng;
    torch::Tensor e = p.model->named_parameters()["model.embed_tokens.weight"];
    e.select(1, 0).fill_(1.0);
    e[p.chat->eos_id()][0] = 4.0;
  }
  const std::string src =
      "class RewardBySeedEnv:\n"
      "    def reset(self, seed=None):\n"
      "        self.seed = seed or 0\n"
      "        return 'go', {}\n"
      "    def step(self, action):\n"
      "        r = [1.0, float('nan'), 1.0, float('inf')][self.seed % 4]\n"
      "        return 'done', r, True, False, {}\n";
  std::vector<rollout::EpisodeSpec> specs;
  for (int seed = 0; seed < 4; ++seed) specs.push_back({"rewards", "logic", src, seed, ""});
  rollout::EpisodeOptions o;
  o.sampling.temperature = 0;
  o.sampling.max_new_tokens = 4;
  o.max_turns = 3;
  o.context_tokens = 2048;
  envsandbox::EnvServer server;
  const std::vector<rollout::EpisodeResult> results = rollout::play_episodes(p.ref(), server, specs, o, 1);
  ASSERT_EQ(results.size(), 4u);

  const std::vector<double> want_reward = {1.0, -1.0, 1.0, -1.0};
  const std::vector<std::string> want_failure = {"", "reward_not_finite", "", "reward_not_finite"};
  std::vector<double> rewards;
  std::vector<std::string> groups;
  for (size_t i = 0; i < results.size(); ++i) {
    const rollout::EpisodeResult& r = results[i];
    EXPECT_EQ(r.turns, 1) << i;
    EXPECT_TRUE(r.terminated) << i;
    EXPECT_EQ(r.reward, want_reward[i]) << i;
    EXPECT_EQ(r.sample.reward, want_reward[i]) << i;
    EXPECT_EQ(r.failure, want_failure[i]) << i;
    rewards.push_back(r.reward);
    groups.push_back(r.sample.env_id);
  }
  const std::vector<double> adv = reward::actor_advantages(rewards, groups);
  const std::vector<double> want_adv = {0.8660254, -0.8660254, 0.8660254, -0.8660254};
  for (size_t i = 0; i < adv.size(); ++i) {
    EXPECT_TRUE(std::isfinite(adv[i])) << i;
    EXPECT_NEAR(adv[i], want_adv[i], 1e-7) << i;
  }
}
