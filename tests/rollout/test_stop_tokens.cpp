// Issue 17: sampling stops on every eos id of the checkpoint (config.json's eos_token_id, an int or a
// list, and generation_config.json's), not only on the chat template's end of turn, on every sampling
// path (policy::stop_token_ids through PolicyRef: episodes, the designer and hints via complete_chats).
//
// The checkpoint is the tiny test policy saved in HF layout, its config.json then edited by hand to
// eos_token_id [kX, kY] and its generation_config.json to eos_token_id kZ. The expected stop set follows
// the documented order (the chat end of turn, config.json's ids, generation_config.json's). A policy is
// rigged to prefer one token T greedily: every embedding row gets first component 1 and T's gets 4, so
// with tied weights the logit of T exceeds every other by about 3 x the normalised first component of
// the last hidden state (~5.6 for hidden size 32, where that component dominates the residual):
// greedy decoding samples T first. Had T not been a stop id, the turn would run to max_new_tokens.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "common/atomic_file.h"
#include "envsandbox/sandbox.h"
#include "policy/checkpoint.h"
#include "policy/stop_tokens.h"
#include "rollout/designer.h"
#include "rollout/episode.h"
#include "rollout/prompts.h"
#include "tests/testing/test_util.h"
#include "tests/testing/tiny_policy.h"

using namespace spade;
using rollout::FinishReason;

namespace {

// Ordinary pieces of the 600-piece tiny vocabulary (the special tokens are at the start).
constexpr int64_t kX = 300, kY = 301, kZ = 302;

void write_json(const std::string& path, const nlohmann::json& j) { write_file_atomic(path, j.dump(2)); }

// The tiny policy saved as a checkpoint whose config.json lists eos [kX, kY] and whose
// generation_config.json lists kZ, loaded back.
struct EosCheckpoint {
  fixtures::TinyPolicy tiny = fixtures::make_tiny_policy(9);
  policy::Transformer model{nullptr};
  rollout::PolicyRef ref() { return {model, tiny.tokenizer, *tiny.chat}; }
};

EosCheckpoint eos_checkpoint() {
  EosCheckpoint c;
  const std::string dir = fixtures::fresh_test_dir("rollout_stop_tokens", "ckpt");
  policy::CheckpointSaveOptions so;
  so.tokenizer_model = fixtures::tiny_tokenizer_path();
  policy::save_checkpoint(dir, c.tiny.model, so);
  nlohmann::json config = nlohmann::json::parse(read_file(dir + "/config.json"));
  config["eos_token_id"] = {kX, kY};
  write_json(dir + "/config.json", config);
  nlohmann::json gen = nlohmann::json::parse(read_file(dir + "/generation_config.json"));
  gen["eos_token_id"] = kZ;
  write_json(dir + "/generation_config.json", gen);
  c.model = policy::load_checkpoint(dir);
  return c;
}

// Makes greedy decoding pick `token` first (see the header comment); undoes an earlier prefer().
void prefer(policy::Transformer& model, int64_t token) {
  torch::NoGradGuard ng;
  torch::Tensor e = model->named_parameters()["model.embed_tokens.weight"];
  e.select(1, 0).fill_(1.0);
  e[token][0] = 4.0;
}

rollout::SamplingParams greedy(int max_new_tokens) {
  rollout::SamplingParams p;
  p.temperature = 0;
  p.max_new_tokens = max_new_tokens;
  return p;
}

}  // namespace

TEST(StopTokens, ChatEndThenConfigThenGenerationConfigEachOnce) {
  // Plain text (no chat template): the checkpoint's ids, config.json's first, duplicates and -1 dropped.
  policy::ModelConfig c;
  c.eos_token_ids = {7, 3, 7, -1};
  EXPECT_EQ(policy::stop_token_ids(c, nullptr), (std::vector<int64_t>{7, 3}));

  EosCheckpoint ck = eos_checkpoint();
  const int64_t end = ck.tiny.chat->eos_id();  // <|im_end|>
  ASSERT_TRUE(end != kX && end != kY && end != kZ);
  EXPECT_EQ(ck.model->config().eos_token_ids, (std::vector<int64_t>{kX, kY, kZ}));
  EXPECT_EQ(ck.ref().stop_token_ids(), (std::vector<int64_t>{end, kX, kY, kZ}));
}

// The designer / hint path (complete_chats): a completion stops at whichever eos id comes first.
TEST(StopTokens, CompletionsStopAtEitherEosOfTheConfig) {
  EosCheckpoint ck = eos_checkpoint();
  for (int64_t eos : {kX, kY, kZ}) {
    prefer(ck.model, eos);
    auto out = rollout::complete_chats(ck.ref(), {{{"user", "Write a game."}}}, greedy(5), 1, 1);
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].output.finish_reason, FinishReason::kStop) << eos;
    EXPECT_EQ(out[0].output.tokens, std::vector<int64_t>{eos}) << eos;
    EXPECT_EQ(out[0].text, "") << eos;  // the stop id is not part of the text
  }
}

// The episode path: every turn stops at the config's eos id, the environment is stepped, and the turn is
// closed with the template's end of turn before the next observation. The environment never ends, so
// the episode runs max_turns = 2 turns (each observation is appended before the turn limit is checked).
// Expected tokens, by the rule in rollout/episode.h:
//   render(first turn) + ([kY] + [<|im_end|>] + ids_for_user_turn("again")) x 2
// with loss mask 1 exactly on the two sampled kY.
TEST(StopTokens, EpisodeTurnsStopAtAConfigEosAndAreClosed) {
  EosCheckpoint ck = eos_checkpoint();
  prefer(ck.model, kY);
  envsandbox::EnvServer server;
  const std::string src = "class AgainEnv:\n    def reset(self, seed=None):\n        return 'start', {}\n"
                          "    def step(self, action):\n        return 'again', 0.0, False, False, {}\n";
  rollout::EpisodeOptions o;
  o.sampling = greedy(4);
  o.max_turns = 2;
  o.context_tokens = 2048;
  auto results = rollout::play_episodes(ck.ref(), server, {{"again", "logic", src, 0, ""}}, o, 3);
  ASSERT_EQ(results.size(), 1u);
  const rollout::EpisodeResult& r = results[0];
  ASSERT_TRUE(r.failure.empty()) << r.failure;
  EXPECT_EQ(r.turns, 2);
  EXPECT_TRUE(r.truncated);  // out of turns
  EXPECT_EQ(r.actions.size(), 2u);  // the environment was stepped after each turn

  const policy::ChatTemplate& chat = *ck.tiny.chat;
  std::vector<int64_t> expected = chat.render(
      {{"system", rollout::agent_system_prompt()}, {"user", rollout::agent_first_turn("start")}}, true);
  const size_t prompt = expected.size();
  expected.push_back(kY);
  expected.push_back(chat.eos_id());
  const std::vector<int64_t> next = chat.ids_for_user_turn("again");
  expected.insert(expected.end(), next.begin(), next.end());
  expected.push_back(kY);
  const size_t second = expected.size() - 1;
  expected.push_back(chat.eos_id());  // the second observation is appended before the turn limit ends it
  expected.insert(expected.end(), next.begin(), next.end());
  EXPECT_EQ(r.sample.tokens, expected);
  std::vector<int> mask(expected.size(), 0);
  mask[prompt] = 1;
  mask[second] = 1;
  EXPECT_EQ(std::vector<int>(r.sample.loss_mask.begin(), r.sample.loss_mask.end()), mask);
}
