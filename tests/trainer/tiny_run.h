// The tiny end-to-end training run shared by test_train.cpp, test_resume.cpp and test_distributed.cpp:
// a 1-layer, hidden-32 model over the repository's seed environments, with a small real corpus.
#pragma once
#include <filesystem>
#include <string>

namespace spade::fixtures {

/// A small real corpus: the stdlib's json package when present (real documentation), else this
/// repository's data folder.
inline std::string tiny_corpus_source() {
  return std::filesystem::exists("/usr/lib/python3.11/json") ? "/usr/lib/python3.11/json"
                                                              : std::string(SPADE_SOURCE_DIR) + "/data";
}

/// The model and seed-environment lines of the tiny config (YAML, each ending in a newline).
inline std::string tiny_model_yaml() {
  return "model: {hidden_size: 32, intermediate_size: 64, num_hidden_layers: 1, num_attention_heads: 2, "
         "num_key_value_heads: 1}\n"
         "seed_envs: {dir: " + std::string(SPADE_SOURCE_DIR) + "/data/seed_envs}\n";
}

/// The whole tiny config of a run under `out_dir`: corpus built from tiny_corpus_source(), a
/// 500-piece tokenizer, 2 warm-start steps, 2 self-play steps over 2 environments, a checkpoint every
/// step. `selfplay_extra` is appended inside the selfplay mapping (e.g. "fill_with_seeds: true, ").
inline std::string tiny_run_yaml(const std::string& out_dir, int threads, int max_attempts,
                                 const std::string& selfplay_extra = "") {
  return "run: {name: t, out_dir: " + out_dir + ", seed: 5, threads: " + std::to_string(threads) + "}\n"
         "corpus: {build_from: [" + tiny_corpus_source() + "], max_words: 40, min_words: 5}\n"
         "tokenizer: {vocab_size: 500}\n" + tiny_model_yaml() +
         "warm_start: {max_steps: 2, batch_tokens: 1024, demos_per_env: 1}\n"
         "selfplay: {steps: 2, k: 1, envs_per_regen: 2, skills_per_regen: 2, plays_per_env: 2, hint_plays: 1,\n"
         "           max_attempts: " + std::to_string(max_attempts) +
         ", max_turns: 2, context_tokens: 1536, " + selfplay_extra +
         "\n           designer: {max_new_tokens: 24}, agent: {max_new_tokens: 6}, hint: {max_new_tokens: 8}}\n"
         "optim: {lr: 0.001}\n"
         "checkpoint: {every: 1, keep_last: 1}\n";
}

}  // namespace spade::fixtures
