// `spade score` and `spade generate` end to end (apps/cmd_score.cpp, apps/cmd_generate.cpp; issue 4):
// the real binary on tiny random checkpoints written by the test. Expected values are computed in the
// test from the same checkpoint loaded through the library, with plain tensor ops that do not go
// through the commands' code: a full forward, torch::log_softmax and a sort for score; a greedy loop that
// re-runs the whole sequence every token (no KV cache, no sampler) for generate.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/atomic_file.h"
#include "policy/checkpoint.h"
#include "policy/tokenizer.h"
#include "policy/transformer.h"
#include "tests/testing/test_util.h"

using namespace spade;

namespace {

fixtures::CommandResult spade_cmd(const std::string& args, bool with_stderr = false) {
  return fixtures::run_command(std::string("OMP_WAIT_POLICY=PASSIVE ") + SPADE_BIN + " " + args +
                               (with_stderr ? " 2>&1" : " 2>/dev/null"));
}

// A small random decoder; init std 0.3 makes its distributions peaked, so greedy choices and the top-20
// order are far from ties.
policy::Transformer random_model(int64_t vocab, const std::string& type, std::vector<int64_t> eos = {}) {
  policy::ModelConfig c;
  c.model_type = type;
  c.vocab_size = vocab;
  c.hidden_size = 32;
  c.intermediate_size = 48;
  c.num_hidden_layers = 2;
  c.num_attention_heads = 4;
  c.num_key_value_heads = 2;
  c.head_dim = 8;
  c.rope_theta = 10000;
  c.max_position_embeddings = 512;
  c.qk_norm = type == "qwen3";
  c.tie_word_embeddings = true;
  c.eos_token_ids = std::move(eos);
  policy::Transformer m(c);
  m->init_weights(17, 0.3);
  return m;
}

// Logits [T, V] (float32) of `ids`: one forward over the whole sequence (no cache).
torch::Tensor full_logits(policy::Transformer& m, const std::vector<int64_t>& ids) {
  m->eval();
  torch::NoGradGuard ng;
  const int64_t T = ids.size();
  auto h = m->forward(torch::tensor(ids, torch::kLong).view({1, T}), torch::arange(T, torch::kLong).view({1, T}));
  return m->lm_head(h)[0].to(torch::kFloat32);
}

}  // namespace

// score --ids on a checkpoint WITHOUT any tokenizer file: per-token logprobs = log_softmax(logits[i-1])
// [ids[i]] (the first token has none: null), sum/mean/perplexity from them, and the last position's
// top-20 (id, logit) pairs, largest first.
TEST(Score, IdsWithoutTokenizerMatchAnIndependentForward) {
  const std::string dir = fixtures::fresh_test_dir("apps_score", "ckpt");
  policy::Transformer m = random_model(64, "qwen3");
  policy::save_checkpoint(dir, m);
  ASSERT_EQ(policy::Tokenizer::file_in_dir(dir), "") << "the checkpoint must have no tokenizer for this test";

  const std::vector<int64_t> ids = {1, 2, 3, 4, 17, 63, 0, 5};
  const fixtures::CommandResult r = spade_cmd("score --checkpoint " + dir + " --ids 1,2,3,4,17,63,0,5 --json");
  ASSERT_EQ(r.rc, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out);

  policy::Transformer loaded = policy::load_checkpoint(dir);  // what the command loads
  const torch::Tensor logits = full_logits(loaded, ids);                  // [8, 64]
  const torch::Tensor logp = torch::log_softmax(logits.to(torch::kDouble), -1);  // [8, 64]
  EXPECT_EQ(j["ids"].get<std::vector<int64_t>>(), ids);
  ASSERT_EQ(j["logprobs"].size(), ids.size());
  EXPECT_TRUE(j["logprobs"][0].is_null());
  double sum = 0;
  for (size_t i = 1; i < ids.size(); ++i) {
    const double want = logp[i - 1][ids[i]].item<double>();
    sum += want;
    EXPECT_NEAR(j["logprobs"][i].get<double>(), want, 1e-4) << "token " << i;
  }
  EXPECT_NEAR(j["sum_logprob"].get<double>(), sum, 1e-3);
  const double n = ids.size() - 1;
  EXPECT_NEAR(j["mean_nll"].get<double>(), -sum / n, 1e-4);
  EXPECT_NEAR(j["perplexity"].get<double>(), std::exp(-sum / n), 1e-3 * std::exp(-sum / n));

  // Top 20 of the last position: a full descending sort of its 64 logits.
  auto [vals, order] = logits[ids.size() - 1].sort(/*dim=*/0, /*descending=*/true);
  ASSERT_EQ(j["last_top"].size(), 20u);
  for (int k = 0; k < 20; ++k) {
    EXPECT_EQ(j["last_top"][k][0].get<int64_t>(), order[k].item<int64_t>()) << "rank " << k;
    EXPECT_NEAR(j["last_top"][k][1].get<double>(), vals[k].item<double>(), 1e-4) << "rank " << k;
  }

  // The text form runs too and prints the same sum.
  const fixtures::CommandResult text = spade_cmd("score --checkpoint " + dir + " --ids 1,2,3,4,17,63,0,5");
  ASSERT_EQ(text.rc, 0) << text.out;
  char want_sum[64];
  std::snprintf(want_sum, sizeof want_sum, "sum logprob %.6f", j["sum_logprob"].get<double>());
  EXPECT_NE(text.out.find(want_sum), std::string::npos) << text.out;
}

// Bad --ids: a non-integer item or an id outside the vocabulary is an error (exit 1) whose message names
// the offending item; --text without a tokenizer in DIR fails too.
TEST(Score, BadIdsAreAClearError) {
  const std::string dir = fixtures::fresh_test_dir("apps_score", "bad");
  policy::Transformer m = random_model(64, "llama");
  policy::save_checkpoint(dir, m);
  {
    const fixtures::CommandResult r = spade_cmd("score --checkpoint " + dir + " --ids 1,x7,3", true);
    EXPECT_EQ(r.rc, 1) << r.out;
    EXPECT_NE(r.out.find("'x7'"), std::string::npos) << r.out;
  }
  {
    const fixtures::CommandResult r = spade_cmd("score --checkpoint " + dir + " --ids 1,64,3", true);
    EXPECT_EQ(r.rc, 1) << r.out;
    EXPECT_NE(r.out.find("token id 64"), std::string::npos) << r.out;  // vocabulary is [0, 64)
  }
  {
    const fixtures::CommandResult r = spade_cmd("score --checkpoint " + dir + " --ids 1,,3", true);
    EXPECT_EQ(r.rc, 1) << r.out;
    EXPECT_NE(r.out.find("''"), std::string::npos) << r.out;  // the empty item
  }
  {
    const fixtures::CommandResult r = spade_cmd("score --checkpoint " + dir + " --text hello", true);
    EXPECT_NE(r.rc, 0) << r.out;
  }
}

// generate --temperature 0 on a checkpoint with a SentencePiece tokenizer.model prints the prompt followed
// by the greedy continuation: the argmax of a full forward over the whole sequence, token by token,
// stopping after the EOS id (which is not printed) or at --max-new-tokens.
TEST(Generate, GreedyContinuationEqualsAFullForwardArgmaxLoop) {
  const std::string tok_dir = fixtures::fresh_test_dir("apps_generate", "tok");
  std::vector<std::string> text;
  for (auto& e : std::filesystem::recursive_directory_iterator(std::string(SPADE_SOURCE_DIR) + "/data/seed_envs/math"))
    if (e.path().extension() == ".py") text.push_back(read_file(e.path().string()));
  ASSERT_FALSE(text.empty());
  policy::Tokenizer::train(text, tok_dir + "/tok", 600);  // >= 256 byte pieces + characters
  policy::Tokenizer tok = policy::Tokenizer::load(tok_dir + "/tok.model");

  const std::string dir = fixtures::fresh_test_dir("apps_generate", "ckpt");
  policy::Transformer m = random_model(tok.vocab_size(), "llama", {tok.eos_id()});
  policy::CheckpointSaveOptions so;
  so.tokenizer_model = tok_dir + "/tok.model";
  policy::save_checkpoint(dir, m, so);
  ASSERT_TRUE(std::filesystem::exists(dir + "/tokenizer.model"));

  const std::string prompt = "def step(self, action):";
  const int max_new = 12;
  std::vector<int64_t> seq = tok.encode(prompt);
  std::vector<int64_t> out;
  policy::Transformer loaded = policy::load_checkpoint(dir);
  for (int i = 0; i < max_new; ++i) {
    const int64_t next = full_logits(loaded, seq)[seq.size() - 1].argmax().item<int64_t>();
    if (next == tok.eos_id()) break;
    out.push_back(next);
    seq.push_back(next);
  }
  const fixtures::CommandResult r =
      spade_cmd("generate --checkpoint " + dir + " --prompt '" + prompt + "' --temperature 0 --max-new-tokens " +
                std::to_string(max_new));
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_EQ(r.out, prompt + tok.decode(out) + "\n");
  EXPECT_FALSE(out.empty());
}

// Issue 17: generate stops on every eos id of the checkpoint: each id of config.json's eos_token_id
// list and generation_config.json's. The stop id is picked from the model's own greedy continuation
// (the full-forward argmax loop above, run without stopping): the first token g[k], k >= 1, not seen
// before it, so the expected output is exactly g[0..k). config.json lists [unused, g[k]] (the stop id
// second in the list); then config.json lists [unused] and generation_config.json g[k].
TEST(Generate, StopsAtEveryEosIdOfConfigAndGenerationConfig) {
  const std::string tok_dir = fixtures::fresh_test_dir("apps_generate_eos", "tok");
  std::vector<std::string> text;
  for (auto& e : std::filesystem::recursive_directory_iterator(std::string(SPADE_SOURCE_DIR) + "/data/seed_envs/math"))
    if (e.path().extension() == ".py") text.push_back(read_file(e.path().string()));
  policy::Tokenizer::train(text, tok_dir + "/tok", 600);
  policy::Tokenizer tok = policy::Tokenizer::load(tok_dir + "/tok.model");
  const std::string dir = fixtures::fresh_test_dir("apps_generate_eos", "ckpt");
  policy::Transformer m = random_model(tok.vocab_size(), "llama", {});
  policy::CheckpointSaveOptions so;
  so.tokenizer_model = tok_dir + "/tok.model";
  policy::save_checkpoint(dir, m, so);

  const std::string prompt = "def reset(self, seed=None):";
  const int max_new = 12;
  std::vector<int64_t> seq = tok.encode(prompt), g;
  policy::Transformer loaded = policy::load_checkpoint(dir);
  for (int i = 0; i < max_new; ++i) {
    g.push_back(full_logits(loaded, seq)[seq.size() - 1].argmax().item<int64_t>());
    seq.push_back(g.back());
  }
  size_t k = 1;
  while (k < g.size() && std::find(g.begin(), g.begin() + k, g[k]) != g.begin() + k) ++k;
  ASSERT_LT(k, g.size()) << "the greedy continuation repeats one token";
  int64_t unused = 0;
  while (std::find(g.begin(), g.end(), unused) != g.end()) ++unused;
  const std::vector<int64_t> expected(g.begin(), g.begin() + static_cast<std::ptrdiff_t>(k));

  auto edit = [&](const std::string& file, const nlohmann::json& eos) {
    nlohmann::json j = nlohmann::json::parse(read_file(dir + "/" + file));
    j["eos_token_id"] = eos;
    write_file_atomic(dir + "/" + file, j.dump(2));
  };
  const std::string cmd = "generate --checkpoint " + dir + " --prompt '" + prompt +
                          "' --temperature 0 --max-new-tokens " + std::to_string(max_new);
  edit("config.json", {unused, g[k]});
  edit("generation_config.json", unused);
  fixtures::CommandResult r = spade_cmd(cmd);
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_EQ(r.out, prompt + tok.decode(expected) + "\n") << "stop id " << g[k] << " second in config.json's list";

  edit("config.json", unused);
  edit("generation_config.json", {g[k]});
  r = spade_cmd(cmd);
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_EQ(r.out, prompt + tok.decode(expected) + "\n") << "stop id " << g[k] << " in generation_config.json";
}
