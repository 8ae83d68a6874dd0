// Multi-turn episodes in a non-ChatML chat format (issue 4): a tiny random policy over a byte-level BPE
// tokenizer with the Llama 3 special tokens (tests/testing/tiny_bpe.h) plays a seed environment end to
// end. The expected token stream is rebuilt independently: the environment is replayed with the
// episode's recorded actions (same seed) to get every observation, and each context segment's text is
// checked against the Llama 3 format written by hand from Meta's published template
// ("<|start_header_id|>{role}<|end_header_id|>\n\n{content | trim}<|eot_id|>"), the first one against
// render_chat(kLlama3). Loss mask 1 must cover exactly the sampled tokens, each turn's ending with
// <|eot_id|>.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "common/atomic_file.h"
#include "envsandbox/game.h"
#include "envsandbox/sandbox.h"
#include "policy/chat_formats.h"
#include "rollout/episode.h"
#include "rollout/prompts.h"
#include "tests/testing/test_util.h"
#include "tests/testing/tiny_bpe.h"
#include "tests/testing/tiny_policy.h"

using namespace spade;

namespace {

std::string trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t\n\r");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t\n\r") - b + 1);
}

}  // namespace

TEST(ChatEpisode, Llama3FormatMultiTurnEndToEnd) {
  const std::string dir = fixtures::fresh_test_dir("rollout_chat_episode", "llama3");
  policy::Tokenizer tok = policy::Tokenizer::load(fixtures::write_tiny_bpe(dir, fixtures::kLlama3Specials));
  policy::ChatTemplate chat(tok, policy::ChatFormat::kLlama3);
  const int64_t eot = tok.token_id("<|eot_id|>");
  ASSERT_EQ(chat.eos_id(), eot);

  policy::ModelConfig c;
  c.vocab_size = tok.vocab_size();
  c.hidden_size = 32;
  c.intermediate_size = 64;
  c.num_hidden_layers = 1;
  c.num_attention_heads = 2;
  c.num_key_value_heads = 1;
  c.head_dim = 16;
  c.rms_norm_eps = 1e-5;
  c.rope_theta = 500000;
  c.max_position_embeddings = 16384;
  c.tie_word_embeddings = true;
  c.eos_token_ids = {eot};
  policy::Transformer model(c);
  model->init_weights(11, 0.02);
  {
    // As in test_episode.cpp: a constant first embedding component and a larger one for <|eot_id|>
    // make the tied output projection favour <|eot_id|>, so turns end and the environment is stepped.
    torch::NoGradGuard ng;
    torch::Tensor e = model->named_parameters()["model.embed_tokens.weight"];
    e.select(1, 0).fill_(1.0);
    e[eot][0] = 2.0;
  }
  rollout::PolicyRef ref{model, tok, chat};

  envsandbox::EnvServer server;
  const std::string gcd = read_file(fixtures::seed_env_path("math/gcd.py"));
  rollout::EpisodeOptions o;
  o.sampling.temperature = 1.0;
  o.sampling.top_k = 0;
  o.sampling.top_p = 1.0;
  o.sampling.max_new_tokens = 8;
  o.max_turns = 4;
  o.context_tokens = 16384;
  const std::vector<rollout::EpisodeSpec> specs = {{"gcd", "math", gcd, 0, ""}, {"gcd", "math", gcd, 1, "hint"}};
  const auto results = rollout::play_episodes(ref, server, specs, o, 5);
  ASSERT_EQ(results.size(), specs.size());

  int stepped_turns = 0;
  for (size_t i = 0; i < results.size(); ++i) {
    SCOPED_TRACE(i);
    const rollout::EpisodeResult& r = results[i];
    ASSERT_TRUE(r.failure.empty()) << r.failure;
    const rollout::Sample& s = r.sample;
    ASSERT_EQ(s.tokens.size(), s.loss_mask.size());
    ASSERT_EQ(s.tokens.size(), s.rollout_logprobs.size());

    // Split into alternating runs: context (mask 0), sampled (mask 1), context, ...
    std::vector<std::vector<int64_t>> runs;
    std::vector<float> run_mask;
    for (size_t t = 0; t < s.tokens.size(); ++t) {
      if (runs.empty() || run_mask.back() != s.loss_mask[t]) {
        runs.emplace_back();
        run_mask.push_back(s.loss_mask[t]);
      }
      runs.back().push_back(s.tokens[t]);
    }
    ASSERT_GE(runs.size(), 2u);
    ASSERT_EQ(run_mask[0], 0.0f);
    for (float m : s.loss_mask) ASSERT_TRUE(m == 0.0f || m == 1.0f);

    // Replay the environment with the recorded actions to get the observations independently.
    std::string reason;
    auto game = envsandbox::Game::open(server, gcd, o.max_turns_cap, &reason);
    ASSERT_TRUE(game) << reason;
    const std::optional<std::string> obs0 = game->reset(specs[i].seed, &reason);
    ASSERT_TRUE(obs0) << reason;
    const std::string first = policy::render_chat(
        policy::ChatFormat::kLlama3,
        {{"system", rollout::agent_system_prompt(), {}}, {"user", rollout::agent_first_turn(*obs0, specs[i].hint), {}}});
    EXPECT_EQ(tok.decode(runs[0]), first);

    // Every sampled run but possibly the last (cut by max_new_tokens) ends with <|eot_id|>; each
    // following context run is exactly the next observation as a Llama 3 user turn + the assistant header.
    size_t k = 0;  // actions consumed
    for (size_t run = 1; run < runs.size(); run += 2) {
      const std::vector<int64_t>& sampled = runs[run];
      const bool last = run + 1 == runs.size();
      if (!last || !r.truncated) {
        ASSERT_EQ(sampled.back(), eot) << "turn " << run / 2;
      }
      if (last) break;
      ASSERT_LT(k, r.actions.size());
      const envsandbox::GameStep step = game->step(r.actions[k++]);
      ++stepped_turns;
      EXPECT_EQ(tok.decode(runs[run + 1]), "<|start_header_id|>user<|end_header_id|>\n\n" + trim(step.obs) +
                                               "<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n");
    }
    EXPECT_EQ(r.turns, static_cast<int>(runs.size() / 2));
    // No ChatML anywhere: the tokenizer has no <|im_start|>; the text has no "<|im".
    EXPECT_EQ(tok.decode(s.tokens).find("<|im"), std::string::npos);
  }
  EXPECT_GE(stepped_turns, 3) << "the biased policy should step the environment over several turns";
}
