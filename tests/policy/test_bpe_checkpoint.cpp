// save_checkpoint ships a tokenizer.json (+ tokenizer_config.json) unchanged, and load_dir reads it back.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "policy/checkpoint.h"
#include "policy/tokenizer.h"

using namespace spade::policy;
namespace fs = std::filesystem;

namespace {

std::string slurp(const std::string& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

}  // namespace

TEST(BpeCheckpoint, SaveCopiesTokenizerJsonAndConfig) {
  const std::string root = std::string(SPADE_TEST_TMP) + "/policy_bpe_ckpt";
  fs::remove_all(root);
  fs::create_directories(root + "/src");
  // Minimal byte-level tokenizer: the 256 byte pieces (ids = byte values, spelled in GPT-2's alphabet,
  // which is what the Ġ/Ā entries are), no merges, one special token.
  std::string vocab = "{";
  int extra = 0;
  for (int b = 0; b < 256; ++b) {
    const bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
    const int cp = printable ? b : 256 + extra++;
    char buf[32];
    std::snprintf(buf, sizeof(buf), "\"\\u%04x\": %d", cp, b);
    vocab += (b ? "," : "") + std::string(buf);
  }
  vocab += "}";
  const std::string tj =
      R"({"added_tokens": [{"id": 256, "content": "<|im_end|>", "special": true}], "normalizer": null,
          "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false, "use_regex": true},
          "decoder": {"type": "ByteLevel"}, "model": {"type": "BPE", "merges": [], "vocab": )" + vocab + "}}";
  std::ofstream(root + "/src/tokenizer.json") << tj;
  std::ofstream(root + "/src/tokenizer_config.json") << R"({"eos_token": "<|im_end|>", "chat_template": "x"})";
  Tokenizer tok = Tokenizer::load(root + "/src/tokenizer.json");
  EXPECT_EQ(tok.eos_id(), 256);
  // Byte pieces only: "hi" = 'h' 104, 'i' 105.
  EXPECT_EQ(tok.encode("hi"), (std::vector<int64_t>{104, 105}));

  ModelConfig c;
  c.model_type = "qwen3";
  c.vocab_size = 257; c.hidden_size = 16; c.intermediate_size = 24; c.num_hidden_layers = 1;
  c.num_attention_heads = 4; c.num_key_value_heads = 2; c.head_dim = 8; c.rope_theta = 1e6;
  c.qk_norm = true; c.tie_word_embeddings = true; c.eos_token_ids = {256};
  Transformer m(c);
  CheckpointSaveOptions o;
  o.tokenizer_model = tok.model_path();
  save_checkpoint(root + "/ckpt", m, o);
  EXPECT_EQ(slurp(root + "/ckpt/tokenizer.json"), tj);
  EXPECT_EQ(slurp(root + "/ckpt/tokenizer_config.json"), slurp(root + "/src/tokenizer_config.json"));
  EXPECT_FALSE(fs::exists(root + "/ckpt/tokenizer.model"));
  Tokenizer back = Tokenizer::load_dir(root + "/ckpt");
  EXPECT_EQ(back.kind(), "bpe");
  EXPECT_EQ(back.eos_id(), 256);
  EXPECT_EQ(back.encode("hi"), (std::vector<int64_t>{104, 105}));
}
