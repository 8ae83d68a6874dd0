// Context budgeting of multi-turn episodes (reference §3): "Per-turn budget:
// max_new_tokens = min(8192, context_left - 64); stop when <= 64 tokens remain" (rollout/episode.cpp,
// EpisodeOptions::reserve_tokens). The cap must bind on a LATER turn, so the policy has to play a known
// number of tokens per turn: the model is built by hand as a greedy bigram chain (every attention and
// MLP output projection zeroed, so the final hidden state is the current token's embedding):
//   any other token -> A1 -> A2 -> A3 -> <|im_end|>
// Every turn therefore samples exactly k = 4 tokens "A1 A2 A3 <|im_end|>" unless its cap is smaller.
// The response decodes to letters only, so gcd.py answers "Invalid: answer with a positive integer."
// and the episode goes on (until its own turn limit, 6).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <set>

#include "common/atomic_file.h"
#include "envsandbox/sandbox.h"
#include "rollout/episode.h"
#include "tests/testing/tiny_policy.h"

using namespace spade;

namespace {

constexpr int kPerTurn = 4;  // A1 A2 A3 <|im_end|>

// The lengths of the runs of equal loss-mask values: {context, sampled, context, sampled, ...}.
std::vector<int> mask_runs(const rollout::Sample& s) {
  std::vector<int> runs;
  for (size_t i = 0; i < s.loss_mask.size(); ++i) {
    if (i == 0 || s.loss_mask[i] != s.loss_mask[i - 1]) runs.push_back(0);
    ++runs.back();
  }
  return runs;
}

struct ChainPolicy {
  fixtures::TinyPolicy tiny = fixtures::make_tiny_policy(1);
  policy::Transformer model{nullptr};
  std::vector<int64_t> chain;  // A1, A2, A3
  rollout::PolicyRef ref() { return {model, tiny.tokenizer, *tiny.chat}; }
};

// Builds the bigram chain. `avoid`: tokens of the prompts and observations (the chain tokens must not
// occur there, so the last prompt token always maps to A1).
ChainPolicy chain_policy(const std::set<int64_t>& avoid) {
  ChainPolicy p;
  policy::ModelConfig c = p.tiny.model->config();
  c.tie_word_embeddings = false;
  p.model = policy::Transformer(c);
  p.model->init_weights(3, 0.02);
  const int64_t V = c.vocab_size;
  // Three chain tokens whose pieces are lower-case letters (with an optional word-start mark), so the
  // response has no digit for gcd.py to parse.
  for (int64_t id = 3; id < V && p.chain.size() < 3; ++id) {
    if (avoid.count(id) || id == p.tiny.chat->eos_id()) continue;
    std::string piece = p.tiny.tokenizer.piece(id);
    if (piece.rfind("\xE2\x96\x81", 0) == 0) piece = piece.substr(3);  // U+2581
    if (piece.size() >= 2 && std::all_of(piece.begin(), piece.end(), [](char ch) { return ch >= 'a' && ch <= 'z'; }))
      p.chain.push_back(id);
  }
  EXPECT_EQ(p.chain.size(), 3u);
  torch::NoGradGuard ng;
  auto params = p.model->named_parameters();
  for (auto& kv : params)
    if (kv.key().find("o_proj") != std::string::npos || kv.key().find("down_proj") != std::string::npos) kv.value().zero_();
  // Embeddings: every token e0, A_i = e_i. Output rows: A1 = 10 e0, A2 = 10 e1, A3 = 10 e2, EOS = 10 e3,
  // the rest 0. After the final RMSNorm (weight 1) a basis vector is sqrt(hidden) e_i, so the chosen
  // token's logit is 10 sqrt(hidden) and every other is 0: a margin of ~57 nats at hidden 32.
  torch::Tensor e = params["model.embed_tokens.weight"], w = params["lm_head.weight"];
  e.zero_();
  w.zero_();
  e.select(1, 0).fill_(1.0);
  const int64_t eos = p.tiny.chat->eos_id();
  for (int i = 0; i < 3; ++i) {
    e[p.chain[i]].zero_();
    e[p.chain[i]][i + 1] = 1.0;
    w[p.chain[i]][i] = 10.0;
  }
  w[eos][3] = 10.0;
  return p;
}

rollout::EpisodeOptions options(int context_tokens, bool persistent) {
  rollout::EpisodeOptions o;
  o.sampling.temperature = 0;  // greedy
  o.sampling.max_new_tokens = 8;
  o.max_turns = 25;
  o.context_tokens = context_tokens;
  o.persistent_kv_cache = persistent;
  return o;
}

}  // namespace

TEST(ContextBudget, PerTurnCapBindsOnALaterTurnAndFullContextEndsTheEpisode) {
  fixtures::TinyPolicy base = fixtures::make_tiny_policy(1);
  const std::string code = read_file(fixtures::seed_env_path("math/gcd.py"));
  const std::string invalid = "Invalid: answer with a positive integer.";
  // The observation after each turn, as the episode runner appends it (a user turn + generation prompt).
  const std::vector<int64_t> obs_ids = base.chat->ids_for_turn("user", invalid);
  const int O = static_cast<int>(obs_ids.size());
  ASSERT_GE(O, kPerTurn);  // used in the derivation below
  envsandbox::EnvServer server;
  // The first prompt, rendered here from the environment's first observation as reference §3 lays it
  // out (system prompt, then the observation as the first user turn): its length is L0.
  std::vector<int64_t> first;
  {
    std::string reason;
    auto game = envsandbox::Game::open(server, code, 25, &reason);
    ASSERT_TRUE(game) << reason;
    const std::optional<std::string> obs0 = game->reset(0, &reason);
    ASSERT_TRUE(obs0) << reason;
    first = base.chat->render({{"system", rollout::agent_system_prompt()}, {"user", rollout::agent_first_turn(*obs0, "")}},
                              /*add_generation_prompt=*/true);
  }
  const int L0 = static_cast<int>(first.size());
  std::set<int64_t> avoid(obs_ids.begin(), obs_ids.end());
  avoid.insert(first.begin(), first.end());
  const std::vector<rollout::EpisodeSpec> specs = {{"gcd", "math", code, 0, ""}};

  for (bool persistent : {true, false}) {
    SCOPED_TRACE(persistent ? "persistent KV cache" : "full re-prefill");
    ChainPolicy p = chain_policy(avoid);
    ASSERT_EQ(p.chain.size(), 3u);
    // Unconstrained (context 4096): 4 tokens per turn, the observation between turns, until gcd.py's
    // own limit of 6 turns truncates the episode.
    auto free_run = rollout::play_episodes(p.ref(), server, specs, options(4096, persistent), 5);
    ASSERT_TRUE(free_run[0].failure.empty()) << free_run[0].failure;
    const std::vector<int> runs = mask_runs(free_run[0].sample);
    ASSERT_GE(free_run[0].sample.tokens.size(), first.size());
    EXPECT_EQ(std::vector<int64_t>(free_run[0].sample.tokens.begin(), free_run[0].sample.tokens.begin() + L0), first);
    std::vector<int> expected_free = {L0};
    for (int t = 0; t < 6; ++t) {
      expected_free.push_back(kPerTurn);
      if (t < 5) expected_free.push_back(O);
    }
    EXPECT_EQ(runs, expected_free);
    EXPECT_EQ(free_run[0].turns, 6);
    const std::vector<int64_t> turn_tokens = {p.chain[0], p.chain[1], p.chain[2], base.chat->eos_id()};
    EXPECT_EQ(std::vector<int64_t>(free_run[0].sample.tokens.begin() + L0, free_run[0].sample.tokens.begin() + L0 + 4),
              turn_tokens);

    // Length before turn j (0-based): L_j = L0 + j (4 + O). Cap of turn j: min(8, C - L_j - 64).
    // Choose C so that turns 0 and 1 are unconstrained and turn 2 is the first that is not:
    //   C = L0 + 2 (4 + O) + 64 + x   ->   cap_0 = min(8, 2 (4 + O) + x) = 8, cap_1 = min(8, 4 + O + x) = 8
    //   (O >= 4), cap_2 = min(8, x).
    //   x = 2: turn 2 samples A1 A2 (2 < 4 tokens, no EOS) -> truncated after 3 turns, length C - 64.
    //   x = 1: turn 2 samples A1 -> truncated after 3 turns.
    //   x = 0: 64 tokens left before turn 2 (<= 64) -> truncated after 2 turns, nothing sampled in turn 2.
    //   x = 4: cap_2 = 4 = k: turn 2 still ends with EOS and the environment is stepped; before turn 3,
    //          C - L_3 = (64 + 4) - (4 + O) = 64 - O <= 64 -> truncated after 3 turns (the observation
    //          itself may run past C - 64: the budget bounds sampled tokens only).
    struct Case {
      int x, turns;
      std::vector<int> runs;  // expected mask runs
    };
    const std::vector<Case> cases = {
        {2, 3, {L0, 4, O, 4, O, 2}},
        {1, 3, {L0, 4, O, 4, O, 1}},
        {0, 2, {L0, 4, O, 4, O}},
        {4, 3, {L0, 4, O, 4, O, 4, O}},
    };
    for (const Case& k : cases) {
      const int C = L0 + 2 * (kPerTurn + O) + 64 + k.x;
      auto r = rollout::play_episodes(p.ref(), server, specs, options(C, persistent), 5);
      SCOPED_TRACE("x = " + std::to_string(k.x) + ", context " + std::to_string(C));
      ASSERT_TRUE(r[0].failure.empty()) << r[0].failure;
      EXPECT_EQ(mask_runs(r[0].sample), k.runs);
      EXPECT_EQ(r[0].turns, k.turns);
      EXPECT_TRUE(r[0].truncated);
      EXPECT_FALSE(r[0].terminated);
      EXPECT_EQ(r[0].reward, 0.0);
      EXPECT_EQ(r[0].actions.size(), static_cast<size_t>(k.x == 4 ? 3 : 2));  // the env steps only on EOS
      // No token is sampled past C - 64 tokens (the reserve).
      int last_sampled = -1;
      for (size_t i = 0; i < r[0].sample.loss_mask.size(); ++i)
        if (r[0].sample.loss_mask[i] > 0) last_sampled = static_cast<int>(i);
      EXPECT_LT(last_sampled, C - 64);
    }
  }
}
