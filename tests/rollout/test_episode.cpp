// Multi-turn episodes, token-in/token-out (docs/design.md Tokens; reference §3): a random tiny policy plays
// a seed environment in the sandbox. Invariants checked: lengths, loss mask only on sampled tokens,
// the prompt rendered exactly by the chat template, rollout logprobs equal to a teacher-forced
// recompute (so on-policy TIS ratios are 1), and the reference's ending rules.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "common/atomic_file.h"
#include "common/error.h"
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
namespace {

// A tiny policy biased towards <|im_end|>, so turns end and the environment is stepped several times:
// every embedding gets a constant first component, <|im_end|> a larger one, and the (tied) output
// projection then favours <|im_end|> by ~h0 * 1.0 nats at every position.
fixtures::TinyPolicy eos_biased_policy() {
  fixtures::TinyPolicy p = fixtures::make_tiny_policy(5);
  torch::NoGradGuard ng;
  torch::Tensor e = p.model->named_parameters()["model.embed_tokens.weight"];
  e.select(1, 0).fill_(1.0);
  e[p.chat->eos_id()][0] = 2.0;
  return p;
}

// Full-distribution sampling, 8 tokens per turn, 5 turns.
rollout::EpisodeOptions multi_turn_options(int max_batch) {
  rollout::EpisodeOptions o;
  o.sampling.temperature = 1.0;
  o.sampling.top_k = 0;
  o.sampling.top_p = 1.0;
  o.sampling.max_new_tokens = 8;
  o.max_turns = 5;
  o.context_tokens = 2048;
  o.max_batch = max_batch;
  return o;
}

// The lengths of an episode's turns: the runs of loss-mask 1 (sampled tokens).
std::vector<int> turn_lengths(const rollout::Sample& s) {
  std::vector<int> runs;
  for (size_t i = 0; i < s.loss_mask.size(); ++i) {
    if (s.loss_mask[i] == 0) continue;
    if (i == 0 || s.loss_mask[i - 1] == 0) runs.push_back(0);
    ++runs.back();
  }
  return runs;
}

}  // namespace

TEST(Episode, PersistentKvCacheEqualsFullReprefillOverManyTurns) {
  fixtures::TinyPolicy p = eos_biased_policy();
  envsandbox::EnvServer server;
  const std::string gcd = read_file(fixtures::seed_env_path("math/gcd.py"));
  rollout::EpisodeOptions o = multi_turn_options(2);  // continuous batching across episodes
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

// Issue 4: episodes advance independently (GenerationSession::run_turns): an episode's next turn starts
// as soon as its environment has answered, not when the slowest episode's turn of the same round ends.
// Every running row gets one token per sampling round (SamplerStats::rounds) and a follow-up turn samples
// its first token in the round after its previous turn ended, so with a slot for every episode the
// call takes exactly max over episodes of its sampled tokens rounds. Turns in lockstep would take the
// sum over turn numbers k of the longest k-th turn. With one slot (max_batch 1) the rows run one at a
// time: the sum of all sampled tokens. Both schedules sample the same tokens (each turn of episode i
// draws from stream (seed + k * 1000003, i)), although the wide one writes follow-up turns into
// finished rows' slots in place (KVCache::write_row; SamplerStats::reused_slots) and the narrow one
// never does.
TEST(Episode, EpisodesAdvanceIndependentlyAndSampleTheSameAtAnyBatch) {
  fixtures::TinyPolicy p = eos_biased_policy();
  envsandbox::EnvServer server;
  const std::string gcd = read_file(fixtures::seed_env_path("math/gcd.py"));
  std::vector<rollout::EpisodeSpec> specs;
  for (int i = 0; i < 5; ++i) specs.push_back({"gcd", "math", gcd, i, ""});
  rollout::SamplerStats wide, narrow;
  auto batched = rollout::play_episodes(p.ref(), server, specs, multi_turn_options(64), 11, &wide);
  auto serial = rollout::play_episodes(p.ref(), server, specs, multi_turn_options(1), 11, &narrow);

  int64_t longest = 0, total = 0, lockstep = 0;
  std::vector<int> longest_kth;  // longest k-th turn over the episodes
  for (size_t i = 0; i < specs.size(); ++i) {
    ASSERT_TRUE(batched[i].failure.empty()) << batched[i].failure;
    const std::vector<int> turns = turn_lengths(batched[i].sample);
    ASSERT_EQ(static_cast<int>(turns.size()), batched[i].turns) << i;
    int64_t sampled = 0;
    for (size_t k = 0; k < turns.size(); ++k) {
      sampled += turns[k];
      if (longest_kth.size() <= k) longest_kth.push_back(0);
      longest_kth[k] = std::max(longest_kth[k], turns[k]);
    }
    longest = std::max(longest, sampled);
    total += sampled;

    EXPECT_EQ(batched[i].sample.tokens, serial[i].sample.tokens) << i;
    EXPECT_EQ(batched[i].actions, serial[i].actions) << i;
    const auto &a = batched[i].sample.rollout_logprobs, &b = serial[i].sample.rollout_logprobs;
    ASSERT_EQ(a.size(), b.size());
    for (size_t t = 0; t < a.size(); ++t) EXPECT_NEAR(a[t], b[t], 1e-5) << i << "," << t;
  }
  for (int l : longest_kth) lockstep += l;
  EXPECT_EQ(wide.rounds, longest);
  EXPECT_EQ(narrow.rounds, total);
  EXPECT_EQ(wide.peak_rows, static_cast<int>(specs.size()));
  EXPECT_GT(wide.reused_slots, 0) << "follow-up turns took finished rows' slots in place";
  EXPECT_LT(wide.rounds, lockstep) << "the turns of this seed differ in length, so lockstep would wait";
}

// An environment whose every step takes 0.2 s and never ends.
const char* const kSlowEnv =
    "import time\n"
    "class SlowEnv:\n"
    "    def __init__(self, max_turns=50, **kwargs):\n"
    "        pass\n"
    "    def reset(self, seed=None):\n"
    "        return 'Wait.', {}\n"
    "    def step(self, action):\n"
    "        time.sleep(0.2)\n"
    "        return 'Still waiting.', 0.0, False, False, {}\n";

// EpisodeOptions::episode_timeout_s: a play's wall clock from its reset. An environment whose every
// step takes 0.2 s and never ends, played by the EOS-biased policy (so turns end and steps happen):
// with a 0.5 s limit the play ends before its 4th step at the latest (3 x 0.2 s > 0.5 s), truncated,
// reward 0, failure "episode_timeout"; without a limit it runs to max_turns (8) with no failure.
TEST(Episode, WallClockPerPlayEndsASlowEpisode) {
  fixtures::TinyPolicy p = eos_biased_policy();
  envsandbox::EnvServer server;
  rollout::EpisodeOptions o = multi_turn_options(1);
  o.max_turns = 8;
  o.max_turns_cap = 50;
  std::vector<rollout::EpisodeSpec> specs = {{"slow", "logic", kSlowEnv, 0, ""}};
  auto unlimited = rollout::play_episodes(p.ref(), server, specs, o, 11);
  ASSERT_EQ(unlimited.size(), 1u);
  EXPECT_EQ(unlimited[0].failure, "");
  EXPECT_EQ(unlimited[0].turns, 8) << "the fixture must step every turn for this test to mean anything";
  EXPECT_TRUE(unlimited[0].truncated);

  o.episode_timeout_s = 0.5;
  auto limited = rollout::play_episodes(p.ref(), server, specs, o, 11);
  ASSERT_EQ(limited.size(), 1u);
  EXPECT_EQ(limited[0].failure, "episode_timeout");
  EXPECT_TRUE(limited[0].truncated);
  EXPECT_FALSE(limited[0].terminated);
  EXPECT_EQ(limited[0].reward, 0.0);
  EXPECT_GE(limited[0].turns, 1);
  EXPECT_LE(limited[0].turns, 4);
  EXPECT_EQ(limited[0].actions.size() + 1, static_cast<size_t>(limited[0].turns));  // the last turn was not stepped
}

// EpisodeResult::process: the CallStatus of the sandbox call that ended the play, which the trainer
// reads for the regret_based designer reward's step-timeout penalty (trainer/selfplay.cpp
// play_outcomes). A step() that sleeps past the sandbox's 0.3 s call deadline ends the play with
// process kTimeout and failure "timeout"; the wall clock per play ("episode_timeout") is not the
// environment's fault and leaves it kOk (the previous test's environment); a load that raises is
// kException ("load_exception").
TEST(Episode, ProcessStatusNamesTheCallThatEndedThePlay) {
  fixtures::TinyPolicy p = eos_biased_policy();
  envsandbox::SandboxOptions so;
  so.call_timeout_s = 0.3;
  envsandbox::EnvServer server(so);
  const std::string hang =
      "import time\n"
      "class HangEnv:\n"
      "    def __init__(self, max_turns=50, **kwargs):\n"
      "        pass\n"
      "    def reset(self, seed=None):\n"
      "        return 'Go.', {}\n"
      "    def step(self, action):\n"
      "        time.sleep(5)\n"
      "        return 'late', 1.0, True, False, {}\n";
  rollout::EpisodeOptions o = multi_turn_options(1);
  o.max_turns = 8;
  o.max_turns_cap = 50;
  std::vector<rollout::EpisodeSpec> specs = {{"hang", "logic", hang, 0, ""},
                                             {"raise", "logic", "raise ValueError('no')\n", 0, ""},
                                             {"slow", "logic", kSlowEnv, 0, ""}};
  o.episode_timeout_s = 0.5;
  auto r = rollout::play_episodes(p.ref(), server, specs, o, 11);
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[0].process, envsandbox::CallStatus::kTimeout) << r[0].failure;
  EXPECT_EQ(r[0].failure, "timeout");
  EXPECT_EQ(r[1].process, envsandbox::CallStatus::kException) << r[1].failure;
  EXPECT_EQ(r[1].failure, "load_exception");
  EXPECT_EQ(r[2].process, envsandbox::CallStatus::kOk) << r[2].failure;
  EXPECT_EQ(r[2].failure, "episode_timeout");
}

// The stable ids written to files and logs (rollouts.h5 role names, metrics, rejected/ reasons) and
// their parsers: each enum value has one name, and names round-trip.
TEST(Episode, OutcomeEnumsHaveStableIds) {
  EXPECT_STREQ(rollout::finish_reason_name(rollout::FinishReason::kStop), "stop");  // OpenAI API values
  EXPECT_STREQ(rollout::finish_reason_name(rollout::FinishReason::kLength), "length");
  for (rollout::Role role : {rollout::Role::Agent, rollout::Role::Designer, rollout::Role::Hint})
    EXPECT_EQ(rollout::parse_role(rollout::role_name(role)), role);
  EXPECT_STREQ(rollout::role_name(rollout::Role::Designer), "designer");
  EXPECT_THROW(rollout::parse_role("Agent"), Error);
  const char* names[] = {"ok", "exception", "memory", "timeout", "exited", "signal", "protocol", "unavailable"};
  for (int i = 0; i < 8; ++i) EXPECT_STREQ(envsandbox::call_status_name(static_cast<envsandbox::CallStatus>(i)), names[i]);
}
