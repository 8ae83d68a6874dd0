// safetensors round trips and error cases; HF checkpoint save -> load bit-identical.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "tests/testing/test_util.h"
#include "common/atomic_file.h"
#include "common/error.h"
#include "policy/checkpoint.h"
#include "policy/safetensors.h"
#include "policy/tokenizer.h"

using namespace spade::policy;
namespace fs = std::filesystem;

namespace {

std::string tmp_dir(const std::string& name) { return spade::fixtures::fresh_test_dir("policy_ckpt", name); }
using spade::fixtures::error_of;

void write_raw(const std::string& path, const std::string& header_json, const std::string& data) {
  std::string s;
  uint64_t n = header_json.size();
  s.append(reinterpret_cast<const char*>(&n), 8);
  s += header_json;
  s += data;
  std::ofstream(path, std::ios::binary) << s;
}

ModelConfig small(bool tied) {
  ModelConfig c;
  c.model_type = "qwen3";
  c.vocab_size = 50; c.hidden_size = 16; c.intermediate_size = 24; c.num_hidden_layers = 2;
  c.num_attention_heads = 4; c.num_key_value_heads = 2; c.head_dim = 8; c.rope_theta = 1e6;
  c.qk_norm = true; c.tie_word_embeddings = tied; c.eos_token_ids = {2};
  return c;
}

}  // namespace

TEST(Safetensors, RoundTripF32Bf16I64) {
  const std::string d = tmp_dir("st");
  std::map<std::string, at::Tensor> t = {
      {"b.weight", torch::randn({3, 5})},
      {"a.bf16", torch::randn({7}).to(torch::kBFloat16)},
      {"c.ids", torch::arange(6, torch::kLong).view({2, 3})},
      {"d.scalar", torch::scalar_tensor(2.5)},  // 0-dim
  };
  write_safetensors(d + "/x.safetensors", t);
  auto f = SafetensorsFile::open(d + "/x.safetensors");
  EXPECT_EQ(f->names(), (std::vector<std::string>{"a.bf16", "b.weight", "c.ids", "d.scalar"}));
  EXPECT_EQ(f->metadata().at("format"), "pt");
  for (const auto& kv : t) {
    auto back = f->get(kv.first);
    EXPECT_EQ(back.scalar_type(), kv.second.scalar_type()) << kv.first;
    // (torch::equal fails on 0-dim tensors in LibTorch 1.13: compare flattened.)
    EXPECT_TRUE(torch::equal(back.reshape({-1}), kv.second.reshape({-1}))) << kv.first;
    EXPECT_EQ(back.sizes(), kv.second.sizes()) << kv.first;
  }
  // Header length is a multiple of 8 (data region aligned), per the format's recommendation.
  std::string raw = spade::read_file(d + "/x.safetensors");
  uint64_t n;
  std::memcpy(&n, raw.data(), 8);
  EXPECT_EQ(n % 8, 0u);
  EXPECT_EQ(raw.substr(8, 2), "{\"");
  // Tensors outlive the file object (the mapping is kept alive).
  auto keep = f->get("b.weight");
  f.reset();
  EXPECT_TRUE(torch::equal(keep, t["b.weight"]));
}

TEST(Safetensors, ErrorsNameFileAndTensor) {
  const std::string d = tmp_dir("bad");
  std::map<std::string, at::Tensor> t = {{"w", torch::ones({4, 4})}};
  write_safetensors(d + "/ok.safetensors", t);
  std::string raw = spade::read_file(d + "/ok.safetensors");
  std::ofstream(d + "/trunc.safetensors", std::ios::binary) << raw.substr(0, raw.size() - 10);
  auto e = error_of([&] { SafetensorsFile::open(d + "/trunc.safetensors"); });
  EXPECT_NE(e.find("trunc.safetensors: tensor 'w'"), std::string::npos) << e;
  EXPECT_NE(e.find("beyond the data region"), std::string::npos) << e;

  std::ofstream(d + "/tiny.safetensors", std::ios::binary) << "abc";
  EXPECT_NE(error_of([&] { SafetensorsFile::open(d + "/tiny.safetensors"); }).find("truncated"), std::string::npos);

  std::ofstream(d + "/short_header.safetensors", std::ios::binary) << raw.substr(0, 20);
  EXPECT_NE(error_of([&] { SafetensorsFile::open(d + "/short_header.safetensors"); }).find("header claims"),
            std::string::npos);

  write_raw(d + "/json.safetensors", "{not json", "");
  EXPECT_NE(error_of([&] { SafetensorsFile::open(d + "/json.safetensors"); }).find("not valid JSON"), std::string::npos);

  write_raw(d + "/span.safetensors", R"({"w":{"dtype":"F32","shape":[2,2],"data_offsets":[0,12]}})", std::string(16, '\0'));
  e = error_of([&] { SafetensorsFile::open(d + "/span.safetensors"); });
  EXPECT_NE(e.find("tensor 'w': data_offsets span 12 bytes but F32 x shape [2,2] needs 16"), std::string::npos) << e;

  write_raw(d + "/inv.safetensors", R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[8,4]}})", std::string(16, '\0'));
  EXPECT_NE(error_of([&] { SafetensorsFile::open(d + "/inv.safetensors"); }).find("inverted"), std::string::npos);

  write_raw(d + "/dtype.safetensors", R"({"w":{"dtype":"F8_E9","shape":[1],"data_offsets":[0,1]}})", std::string(8, '\0'));
  e = error_of([&] { SafetensorsFile::open(d + "/dtype.safetensors"); });
  EXPECT_NE(e.find("tensor 'w': unsupported safetensors dtype 'F8_E9'"), std::string::npos) << e;

  write_raw(d + "/overlap.safetensors",
            R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
            std::string(16, '\0'));
  EXPECT_NE(error_of([&] { SafetensorsFile::open(d + "/overlap.safetensors"); }).find("overlap"), std::string::npos);

  // __metadata__ is tolerated; unaligned data is copied rather than mis-read.
  std::string payload(5, '\0');
  float v = 1.5f;
  std::memcpy(&payload[1], &v, 4);
  write_raw(d + "/meta.safetensors",
            R"({"__metadata__":{"format":"pt"},"u":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"f":{"dtype":"F32","shape":[1],"data_offsets":[1,5]}})",
            payload);
  auto f = SafetensorsFile::open(d + "/meta.safetensors");
  EXPECT_EQ(f->get("f").item<float>(), 1.5f);
}

// A config.json that never ends (a symlink to /dev/zero) was read forever; it is now an error once
// more than the 64 MiB bound for metadata files has arrived.
TEST(Checkpoint, EndlessConfigFileIsAnErrorNotAHang) {
  const std::string d = tmp_dir("endless");
  fs::create_symlink("/dev/zero", d + "/config.json");
  const std::string e = error_of([&] { load_model_config(d); });
  EXPECT_NE(e.find(d + "/config.json is larger than 67108864 bytes"), std::string::npos) << e;
}

TEST(Checkpoint, SaveLoadBitIdenticalTiedAndUntied) {
  for (bool tied : {true, false}) {
    const std::string d = tmp_dir(tied ? "tied" : "untied") + "/step_000001";
    Transformer m(small(tied));
    m->init_weights(3);
    save_checkpoint(d, m);
    EXPECT_FALSE(fs::exists(d + ".tmp"));
    EXPECT_TRUE(fs::exists(d + "/config.json") && fs::exists(d + "/generation_config.json"));
    auto f = SafetensorsFile::open(d + "/model.safetensors");
    EXPECT_EQ(f->contains("lm_head.weight"), !tied);
    Transformer back = load_checkpoint(d);
    auto pa = m->named_parameters(), pb = back->named_parameters();
    ASSERT_EQ(pa.size(), pb.size());
    for (const auto& p : pa) EXPECT_TRUE(torch::equal(p.value(), pb[p.key()])) << p.key();
    auto ids = torch::tensor({1L, 2L, 3L}).view({1, 3}), pos = torch::arange(3).view({1, 3});
    EXPECT_TRUE(torch::equal(m->lm_head(m->forward(ids, pos)), back->lm_head(back->forward(ids, pos))));
    if (tied) {  // tying survives loading: head and embedding are one tensor
      torch::NoGradGuard ng;
      back->named_parameters()["model.embed_tokens.weight"].add_(1.0);
      auto h = torch::randn({1, 16});
      EXPECT_TRUE(torch::allclose(back->lm_head(h), torch::matmul(h, pb["model.embed_tokens.weight"].t())));
    }
  }
}

TEST(Checkpoint, Bf16ExportAndTokenizerCopy) {
  const std::string d = tmp_dir("bf16") + "/ckpt";
  const std::string tokdir = tmp_dir("bf16tok");
  std::vector<std::string> text(20, "hello world, def f(x): return x\n");
  Tokenizer::train(text, tokdir + "/t", 300);
  Transformer m(small(true));
  m->init_weights(4);
  CheckpointSaveOptions o;
  o.dtype = "bfloat16";
  o.tokenizer_model = tokdir + "/t.model";
  save_checkpoint(d, m, o);
  EXPECT_TRUE(fs::exists(d + "/tokenizer.model"));
  EXPECT_EQ(SafetensorsFile::open(d + "/model.safetensors")->entry("model.norm.weight").dtype, "BF16");
  EXPECT_EQ(load_model_config(d).torch_dtype, "bfloat16");
  Transformer back = load_checkpoint(d, torch::kBFloat16);
  for (const auto& p : m->named_parameters())
    EXPECT_TRUE(torch::equal(p.value().to(torch::kBFloat16), back->named_parameters()[p.key()])) << p.key();
}

// A user's SentencePiece checkpoint (Llama 2 / Mistral layout) keeps its own tokenizer_config.json and
// so its chat template; spade's own tokenizer (no config beside it) gets the ChatML one.
TEST(Checkpoint, SentencePieceCheckpointKeepsItsOwnTokenizerConfig) {
  const std::string tokdir = tmp_dir("spm_user_tok");
  std::vector<std::string> text(20, "hello world, def f(x): return x\n");
  Tokenizer::train(text, tokdir + "/tokenizer", 300);
  const std::string user_config =
      R"({"tokenizer_class": "LlamaTokenizer", "chat_template": "{{ bos_token }}[INST] <<SYS>>\n..."})";
  spade::write_file_atomic(tokdir + "/tokenizer_config.json", user_config);
  Transformer m(small(true));
  m->init_weights(4);
  CheckpointSaveOptions o;
  o.tokenizer_model = tokdir + "/tokenizer.model";
  const std::string d = tmp_dir("spm_user") + "/ckpt";
  save_checkpoint(d, m, o);
  EXPECT_EQ(spade::read_file(d + "/tokenizer_config.json"), user_config);

  const std::string own = tmp_dir("spm_own_tok");
  Tokenizer::train(text, own + "/t", 300);
  o.tokenizer_model = own + "/t.model";
  const std::string d2 = tmp_dir("spm_own") + "/ckpt";
  save_checkpoint(d2, m, o);
  auto config = nlohmann::json::parse(spade::read_file(d2 + "/tokenizer_config.json"));
  EXPECT_NE(config.at("chat_template").get<std::string>().find("<|im_start|>"), std::string::npos);
}

// An HF Llama 2 / Mistral directory holds tokenizer.model and a tokenizer.json that is its
// SentencePiece-style BPE conversion (model.byte_fallback true, Prepend/Replace normalizer, as in
// meta-llama/Llama-2-7b-hf's tokenizer.json): the directory loads through tokenizer.model, which
// BpeTokenizer's byte-level reader would reject. A byte-level tokenizer.json beside a .model still wins.
TEST(Checkpoint, LlamaStyleDirectoryWithBothTokenizerFilesLoadsTheModelFile) {
  const std::string dir = tmp_dir("both_tok");
  std::vector<std::string> text(20, "hello world, def f(x): return x\n");
  Tokenizer::train(text, dir + "/tokenizer", 300);
  const std::string spm_json =
      R"({"normalizer": {"type": "Sequence", "normalizers": [{"type": "Prepend", "prepend": "\u2581"},
          {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"}]}, "pre_tokenizer": null,
          "decoder": {"type": "Sequence", "decoders": [{"type": "ByteFallback"}]},
          "model": {"type": "BPE", "byte_fallback": true, "vocab": {"<unk>": 0}, "merges": []}})";
  spade::write_file_atomic(dir + "/tokenizer.json", spm_json);
  EXPECT_EQ(Tokenizer::file_in_dir(dir), (fs::path(dir) / "tokenizer.model").string());
  const Tokenizer tok = Tokenizer::load_dir(dir);
  EXPECT_EQ(tok.kind(), "sentencepiece");
  EXPECT_EQ(tok.decode(tok.encode("hello world")), "hello world");
  // The same JSON alone loads, as the SentencePiece-style BPE of policy/sp_bpe_tokenizer.h.
  fs::remove(dir + "/tokenizer.model");
  EXPECT_EQ(Tokenizer::file_in_dir(dir), (fs::path(dir) / "tokenizer.json").string());
  EXPECT_EQ(Tokenizer::load_dir(dir).kind(), "sentencepiece_bpe");
  // A byte-level tokenizer.json (the 256 byte pieces, GPT-2 spelling) beside a tokenizer.model is preferred.
  Tokenizer::train(text, dir + "/tokenizer", 300);
  std::string vocab = "{";
  int extra = 0;
  for (int b = 0; b < 256; ++b) {
    const bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
    char buf[32];
    std::snprintf(buf, sizeof(buf), "\"\\u%04x\": %d", printable ? b : 256 + extra++, b);
    vocab += (b ? "," : "") + std::string(buf);
  }
  vocab += "}";
  spade::write_file_atomic(dir + "/tokenizer.json",
                           R"({"normalizer": null, "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false,
                               "use_regex": true}, "decoder": {"type": "ByteLevel"},
                               "model": {"type": "BPE", "merges": [], "vocab": )" + vocab + "}}");
  EXPECT_EQ(Tokenizer::load_dir(dir).kind(), "bpe");
}

TEST(Checkpoint, LoadErrorsNameFileAndTensor) {
  const std::string d = tmp_dir("errs") + "/c";
  Transformer m(small(false));
  save_checkpoint(d, m);
  auto tensors = read_safetensors(d + "/model.safetensors");
  std::map<std::string, at::Tensor> copy;
  for (auto& kv : tensors) copy[kv.first] = kv.second.clone();

  auto missing = copy;
  missing.erase("model.layers.1.mlp.up_proj.weight");
  write_safetensors(d + "/model.safetensors", missing);
  auto e = error_of([&] { load_checkpoint(d); });
  EXPECT_NE(e.find("tensor 'model.layers.1.mlp.up_proj.weight' is missing"), std::string::npos) << e;

  auto wrong = copy;
  wrong["model.norm.weight"] = torch::ones({17});
  write_safetensors(d + "/model.safetensors", wrong);
  e = error_of([&] { load_checkpoint(d); });
  EXPECT_NE(e.find("model.safetensors: tensor 'model.norm.weight' has shape [17]"), std::string::npos) << e;

  auto extra = copy;
  extra["model.layers.9.mlp.up_proj.weight"] = torch::ones({1});
  write_safetensors(d + "/model.safetensors", extra);
  EXPECT_NE(error_of([&] { load_checkpoint(d); }).find("unexpected tensor 'model.layers.9.mlp.up_proj.weight'"),
            std::string::npos);

  write_safetensors(d + "/model.safetensors", copy);
  auto cfg = nlohmann::json::parse(spade::read_file(d + "/config.json"));
  cfg["model_type"] = "gpt2";
  spade::write_file_atomic(d + "/config.json", cfg.dump());
  e = error_of([&] { load_checkpoint(d); });
  EXPECT_NE(e.find("config.json: key 'model_type' = 'gpt2' is not supported"), std::string::npos) << e;
  EXPECT_NE(error_of([&] { load_checkpoint(d + "/nope"); }).find("config.json: missing"), std::string::npos);
}

TEST(Checkpoint, ShardedIndexLoads) {
  const std::string d = tmp_dir("shard") + "/c";
  Transformer m(small(true));
  m->init_weights(9);
  save_checkpoint(d, m);
  auto all = read_safetensors(d + "/model.safetensors");
  std::map<std::string, at::Tensor> s1, s2;
  nlohmann::json wm;
  for (auto& kv : all) {
    const bool first = kv.first.find("layers.1") == std::string::npos;
    (first ? s1 : s2)[kv.first] = kv.second.clone();
    wm[kv.first] = first ? "model-00001-of-00002.safetensors" : "model-00002-of-00002.safetensors";
  }
  write_safetensors(d + "/model-00001-of-00002.safetensors", s1);
  write_safetensors(d + "/model-00002-of-00002.safetensors", s2);
  fs::remove(d + "/model.safetensors");
  spade::write_file_atomic(d + "/model.safetensors.index.json", nlohmann::json{{"weight_map", wm}}.dump());
  Transformer back = load_checkpoint(d);
  for (const auto& p : m->named_parameters()) EXPECT_TRUE(torch::equal(p.value(), back->named_parameters()[p.key()]));
}
