// Test fixture: a tiny random policy (SentencePiece tokenizer trained on the seed environments and
// prompt texts + a 1-2 layer Llama-style decoder). Built once per test binary and cached on disk.
#pragma once
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "common/atomic_file.h"
#include "policy/chat_template.h"
#include "policy/tokenizer.h"
#include "policy/transformer.h"
#include "rollout/policy_ref.h"
#include "rollout/prompts.h"

namespace spade::fixtures {

inline std::string seed_env_path(const std::string& rel) {
  return std::string(SPADE_SOURCE_DIR) + "/data/seed_envs/" + rel;
}

struct TinyPolicy {
  policy::Tokenizer tokenizer;
  std::unique_ptr<policy::ChatTemplate> chat;
  policy::Transformer model{nullptr};
  rollout::PolicyRef ref() { return {model, tokenizer, *chat}; }
};

/// Tokenizer trained (once, cached under SPADE_TEST_TMP) on seed programs and prompt texts.
inline std::string tiny_tokenizer_path() {
  const std::string prefix = std::string(SPADE_TEST_TMP) + "/tiny_tokenizer/tok";
  const std::string path = prefix + ".model";
  if (std::filesystem::exists(path)) return path;
  std::vector<std::string> text;
  for (auto& e : std::filesystem::recursive_directory_iterator(std::string(SPADE_SOURCE_DIR) + "/data/seed_envs"))
    if (e.path().extension() == ".py") text.push_back(read_file(e.path().string()));
  for (const rollout::Skill& s : rollout::game_skills())
    text.push_back(rollout::designer_user_prompt(s, "A document about numbers.", {}, 6));
  text.push_back(rollout::agent_first_turn("Observation text", "a hint"));
  text.push_back(rollout::hint_user_prompt(""));
  std::filesystem::create_directories(std::filesystem::path(prefix).parent_path());
  policy::TokenizerTrainOptions opt;
  opt.sentences = text;
  // A private name per process: test processes running in parallel may all train it at once; each
  // publishes its own (identical) file with an atomic rename, so a reader never sees a partial one.
  opt.model_prefix = prefix + ".tmp" + std::to_string(getpid());
  opt.vocab_size = 600;
  policy::Tokenizer::train(opt);
  std::filesystem::rename(opt.model_prefix + ".model", path);
  std::filesystem::remove(opt.model_prefix + ".vocab");
  return path;
}

inline TinyPolicy make_tiny_policy(uint64_t seed = 1, int64_t hidden = 32, int64_t layers = 1) {
  TinyPolicy p;
  p.tokenizer = policy::Tokenizer::load(tiny_tokenizer_path());
  p.chat = std::make_unique<policy::ChatTemplate>(p.tokenizer);
  policy::ModelConfig c;
  c.vocab_size = p.tokenizer.vocab_size();
  c.hidden_size = hidden;
  c.intermediate_size = 2 * hidden;
  c.num_hidden_layers = layers;
  c.num_attention_heads = 2;
  c.num_key_value_heads = 1;
  c.head_dim = hidden / 2;
  c.rms_norm_eps = 1e-5;
  c.rope_theta = 10000;
  c.max_position_embeddings = 4096;
  c.tie_word_embeddings = true;
  c.eos_token_ids = {p.chat->eos_id()};
  p.model = policy::Transformer(c);
  p.model->init_weights(seed, 0.02);
  return p;
}

}  // namespace spade::fixtures
