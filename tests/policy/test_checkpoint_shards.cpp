// Checkpoint layout (issue 4): sharded saving above max_shard_size, generation_config.json eos merging,
// bit-identical save/load round trips for every family, fp16 checkpoints, the streaming writer.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "common/atomic_file.h"
#include "common/error.h"
#include "policy/checkpoint.h"
#include "policy/checkpoint_writer.h"
#include "policy/safetensors.h"
#include "tests/testing/test_util.h"

using namespace spade::policy;
namespace fs = std::filesystem;
using nlohmann::json;
using spade::fixtures::error_of;

namespace {

std::string tmp_dir(const std::string& name) { return spade::fixtures::fresh_test_dir("policy_ckpt_shards", name); }

// Qwen3, vocab 50, hidden 16, intermediate 24, 2 layers, 4 heads of 8, 2 kv heads, tied embeddings.
// Its float32 tensors, in name order, with their bytes (elements x 4):
//   model.embed_tokens.weight                 50x16  3200
//   per layer L (0, 1):
//     input_layernorm.weight                  16       64
//     mlp.down_proj.weight                    16x24  1536
//     mlp.gate_proj.weight                    24x16  1536
//     mlp.up_proj.weight                      24x16  1536
//     post_attention_layernorm.weight         16       64
//     self_attn.k_norm.weight                 8        32
//     self_attn.k_proj.weight                 16x16  1024
//     self_attn.o_proj.weight                 16x32  2048
//     self_attn.q_norm.weight                 8        32
//     self_attn.q_proj.weight                 32x16  2048
//     self_attn.v_proj.weight                 16x16  1024   (layer total 10944)
//   model.norm.weight                         16       64
// Total 3200 + 2 * 10944 + 64 = 25152 bytes.
constexpr uint64_t kTinyBytes = 25152;

ModelConfig tiny_qwen3() {
  ModelConfig c;
  c.model_type = "qwen3";
  c.vocab_size = 50; c.hidden_size = 16; c.intermediate_size = 24; c.num_hidden_layers = 2;
  c.num_attention_heads = 4; c.num_key_value_heads = 2; c.head_dim = 8; c.rope_theta = 1e6;
  c.qk_norm = true; c.tie_word_embeddings = true; c.eos_token_ids = {2};
  return c;
}

// Every parameter (norms and biases included) set to N(0, 0.5) draws, so a round trip that drops or
// swaps any tensor shows.
void randomize(Transformer& m, uint64_t seed) {
  torch::manual_seed(seed);
  torch::NoGradGuard ng;
  for (auto& p : m->named_parameters()) p.value().normal_(0.0, 0.5);
}

torch::Tensor logits_of(Transformer& m) {
  torch::NoGradGuard ng;
  auto ids = torch::tensor({1L, 7L, 3L, 9L, 2L}).view({1, 5});
  return m->lm_head(m->forward(ids, torch::arange(5).view({1, 5})));
}

void expect_same_parameters(Transformer& a, Transformer b) {
  auto pa = a->named_parameters(), pb = b->named_parameters();
  ASSERT_EQ(pa.size(), pb.size());
  for (const auto& p : pa) {
    ASSERT_TRUE(pb.contains(p.key())) << p.key();
    EXPECT_EQ(pb[p.key()].scalar_type(), p.value().scalar_type()) << p.key();
    EXPECT_TRUE(torch::equal(p.value(), pb[p.key()])) << p.key();
  }
}

std::vector<std::string> files_named(const std::string& dir, const std::string& suffix) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string n = e.path().filename().string();
    if (n.size() >= suffix.size() && n.compare(n.size() - suffix.size(), suffix.size(), suffix) == 0) out.push_back(n);
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

// max_shard_size 8192 on the tiny model (sizes above), greedy in name order as huggingface_hub's
// split_state_dict_into_shards_factory:
//   shard 1: embed 3200 + L0 input_ln 64 + down/gate/up 3x1536 + post_ln 64 + k_norm 32 = 7968
//            (+ L0 k_proj 1024 would make 8992 > 8192)
//   shard 2: L0 k_proj 1024, o_proj 2048, q_norm 32, q_proj 2048, v_proj 1024, L1 input_ln 64,
//            L1 down 1536 = 7776 (+ L1 gate 1536 = 9312 > 8192)
//   shard 3: L1 gate 1536, up 1536, post_ln 64, k_norm 32, k_proj 1024, o_proj 2048, q_norm 32 = 6272
//            (+ L1 q_proj 2048 = 8320 > 8192)
//   shard 4: L1 q_proj 2048, v_proj 1024, model.norm 64 = 3136
TEST(CheckpointShards, SplitsByCumulativeTensorBytesAndLoadsBitIdentically) {
  const std::string d = tmp_dir("fp32") + "/ckpt";
  Transformer m(tiny_qwen3());
  randomize(m, 11);
  CheckpointSaveOptions o;
  o.max_shard_size = 8192;
  save_checkpoint(d, m, o);

  const std::vector<std::string> shards = {"model-00001-of-00004.safetensors", "model-00002-of-00004.safetensors",
                                           "model-00003-of-00004.safetensors", "model-00004-of-00004.safetensors"};
  EXPECT_EQ(files_named(d, ".safetensors"), shards);
  EXPECT_FALSE(fs::exists(d + "/model.safetensors"));
  const json index = json::parse(spade::read_file(d + "/model.safetensors.index.json"));
  EXPECT_EQ(index.at("metadata").at("total_size").get<uint64_t>(), kTinyBytes);
  const json& wm = index.at("weight_map");
  EXPECT_EQ(wm.size(), 2u * 11u + 2u);  // 11 tensors per layer + embedding + final norm (tied: no lm_head)
  EXPECT_EQ(wm.at("model.embed_tokens.weight"), shards[0]);
  EXPECT_EQ(wm.at("model.layers.0.self_attn.k_norm.weight"), shards[0]);
  EXPECT_EQ(wm.at("model.layers.0.self_attn.k_proj.weight"), shards[1]);
  EXPECT_EQ(wm.at("model.layers.1.mlp.down_proj.weight"), shards[1]);
  EXPECT_EQ(wm.at("model.layers.1.mlp.gate_proj.weight"), shards[2]);
  EXPECT_EQ(wm.at("model.layers.1.self_attn.q_norm.weight"), shards[2]);
  EXPECT_EQ(wm.at("model.layers.1.self_attn.q_proj.weight"), shards[3]);
  EXPECT_EQ(wm.at("model.norm.weight"), shards[3]);
  const std::vector<uint64_t> expected_bytes = {7968, 7776, 6272, 3136};
  for (size_t i = 0; i < shards.size(); ++i) {
    auto f = SafetensorsFile::open(d + "/" + shards[i]);
    EXPECT_EQ(f->metadata().at("format"), "pt") << shards[i];
    uint64_t bytes = 0;
    for (const auto& n : f->names()) {
      bytes += f->entry(n).end - f->entry(n).begin;
      EXPECT_EQ(wm.at(n), shards[i]) << n;
    }
    EXPECT_EQ(bytes, expected_bytes[i]) << shards[i];
  }

  Transformer back = load_checkpoint(d);
  expect_same_parameters(m, back);
  EXPECT_TRUE(torch::equal(logits_of(m), logits_of(back)));
}

// bf16 halves every tensor, so max_shard_size 4096 splits exactly as 8192 does for fp32 (4 shards,
// total 25152 / 2 = 12576 bytes).
TEST(CheckpointShards, Bf16ShardsLoadBitIdentically) {
  const std::string d = tmp_dir("bf16") + "/ckpt";
  Transformer m(tiny_qwen3());
  randomize(m, 12);
  CheckpointSaveOptions o;
  o.dtype = "bfloat16";
  o.max_shard_size = 4096;
  save_checkpoint(d, m, o);
  EXPECT_EQ(files_named(d, ".safetensors").size(), 4u);
  const json index = json::parse(spade::read_file(d + "/model.safetensors.index.json"));
  EXPECT_EQ(index.at("metadata").at("total_size").get<uint64_t>(), kTinyBytes / 2);
  EXPECT_EQ(SafetensorsFile::open(d + "/model-00004-of-00004.safetensors")->entry("model.norm.weight").dtype, "BF16");
  Transformer back = load_checkpoint(d, torch::kBFloat16);
  for (const auto& p : m->named_parameters())
    EXPECT_TRUE(torch::equal(p.value().to(torch::kBFloat16), back->named_parameters()[p.key()])) << p.key();
}

// A tensor larger than the limit goes alone into its own shard; the threshold is inclusive.
//   3000: embed 3200 > 3000 alone (1); [L0 ln, down] 1600 (2); [gate] (3); [up, post, k_norm, k_proj] 2656 (4);
//         [o_proj, q_norm] 2080 (5); [q_proj] (6); [L0 v_proj, L1 ln, L1 down] 2624 (7); [gate] (8);
//         [up, post, k_norm, k_proj] (9); [o_proj, q_norm] (10); [q_proj] (11); [v_proj, model.norm] 1088 (12).
//   25152 (= total): one model.safetensors, no index.  25151: everything but model.norm (the last name), 2 files.
TEST(CheckpointShards, OversizedTensorAloneAndThresholdBoundary) {
  Transformer m(tiny_qwen3());
  randomize(m, 13);
  CheckpointSaveOptions o;
  o.max_shard_size = 3000;
  const std::string d = tmp_dir("edge") + "/ckpt";
  save_checkpoint(d, m, o);
  EXPECT_EQ(files_named(d, ".safetensors").size(), 12u);
  auto first = SafetensorsFile::open(d + "/model-00001-of-00012.safetensors");
  EXPECT_EQ(first->names(), std::vector<std::string>{"model.embed_tokens.weight"});
  EXPECT_EQ(SafetensorsFile::open(d + "/model-00012-of-00012.safetensors")->names(),
            (std::vector<std::string>{"model.layers.1.self_attn.v_proj.weight", "model.norm.weight"}));
  expect_same_parameters(m, load_checkpoint(d));

  // Re-saving into the same directory with a large threshold leaves no stale shards or index beside
  // the new single file (the directory is replaced whole), and the reverse leaves no model.safetensors,
  // which the loader would otherwise prefer over the new index.
  o.max_shard_size = kTinyBytes;
  save_checkpoint(d, m, o);
  EXPECT_EQ(files_named(d, ".safetensors"), std::vector<std::string>{"model.safetensors"});
  EXPECT_FALSE(fs::exists(d + "/model.safetensors.index.json"));
  expect_same_parameters(m, load_checkpoint(d));

  o.max_shard_size = kTinyBytes - 1;
  save_checkpoint(d, m, o);
  EXPECT_EQ(files_named(d, ".safetensors"),
            (std::vector<std::string>{"model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"}));
  EXPECT_EQ(SafetensorsFile::open(d + "/model-00002-of-00002.safetensors")->names(),
            std::vector<std::string>{"model.norm.weight"});
  expect_same_parameters(m, load_checkpoint(d));

  // The default (5e9 bytes) keeps a small model in one file.
  save_checkpoint(d, m);
  EXPECT_EQ(files_named(d, ".safetensors"), std::vector<std::string>{"model.safetensors"});

  o.max_shard_size = 0;
  EXPECT_NE(error_of([&] { save_checkpoint(d, m, o); }).find("max_shard_size must be positive"), std::string::npos);
}

// Real Qwen3 checkpoints (e.g. Qwen/Qwen3-8B) ship config.json "eos_token_id": 151645 and
// generation_config.json "eos_token_id": [151645, 151643], "bos_token_id": 151643; transformers'
// generate() stops on the generation config's list. Files written by hand here.
TEST(CheckpointShards, GenerationConfigEosIdsAreMerged) {
  const std::string d = tmp_dir("gen") + "/ckpt";
  Transformer m(tiny_qwen3());
  save_checkpoint(d, m);
  json cfg = json::parse(spade::read_file(d + "/config.json"));
  cfg["eos_token_id"] = 151645;
  cfg.erase("bos_token_id");
  spade::write_file_atomic(d + "/config.json", cfg.dump());
  spade::write_file_atomic(d + "/generation_config.json",
                           R"({"bos_token_id": 151643, "do_sample": true, "eos_token_id": [151645, 151643],
                               "pad_token_id": 151643, "temperature": 0.6, "top_k": 20, "top_p": 0.95})");
  ModelConfig c = load_model_config(d);
  EXPECT_EQ(c.eos_token_ids, (std::vector<int64_t>{151645, 151643}));
  EXPECT_EQ(c.bos_token_id, 151643);
  EXPECT_EQ(load_checkpoint(d)->config().eos_token_ids, (std::vector<int64_t>{151645, 151643}));

  // Union, config.json's ids first, in their order; a single int in generation_config.json.
  cfg["eos_token_id"] = json::array({7, 3});
  spade::write_file_atomic(d + "/config.json", cfg.dump());
  spade::write_file_atomic(d + "/generation_config.json", R"({"eos_token_id": 5})");
  EXPECT_EQ(load_model_config(d).eos_token_ids, (std::vector<int64_t>{7, 3, 5}));
  spade::write_file_atomic(d + "/generation_config.json", R"({"eos_token_id": [3, 9, 7]})");
  EXPECT_EQ(load_model_config(d).eos_token_ids, (std::vector<int64_t>{7, 3, 9}));
  // generation_config.json's bos replaces config.json's (what generate() uses).
  cfg["bos_token_id"] = 1;
  spade::write_file_atomic(d + "/config.json", cfg.dump());
  spade::write_file_atomic(d + "/generation_config.json", R"({"bos_token_id": 4})");
  EXPECT_EQ(load_model_config(d).bos_token_id, 4);
  EXPECT_EQ(load_model_config(d).eos_token_ids, (std::vector<int64_t>{7, 3}));
  // Without the file, config.json alone.
  fs::remove(d + "/generation_config.json");
  EXPECT_EQ(load_model_config(d).eos_token_ids, (std::vector<int64_t>{7, 3}));
  EXPECT_EQ(load_model_config(d).bos_token_id, 1);

  // Malformed files: errors name the file (and the key).
  const std::string gen = d + "/generation_config.json";
  spade::write_file_atomic(gen, "{\"eos_token_id\": [1,");
  std::string e = error_of([&] { load_model_config(d); });
  EXPECT_NE(e.find(gen + ": invalid JSON"), std::string::npos) << e;
  spade::write_file_atomic(gen, R"({"eos_token_id": "</s>"})");
  e = error_of([&] { load_checkpoint(d); });
  EXPECT_NE(e.find(gen + ": key 'eos_token_id' must be an integer"), std::string::npos) << e;
  spade::write_file_atomic(gen, R"({"eos_token_id": [1, 2.5]})");
  e = error_of([&] { load_model_config(d); });
  EXPECT_NE(e.find(gen + ": key 'eos_token_id[]' must be an integer"), std::string::npos) << e;
  spade::write_file_atomic(gen, "[1, 2]");
  e = error_of([&] { load_model_config(d); });
  EXPECT_NE(e.find(gen + ": generation config must be a JSON object"), std::string::npos) << e;
}

// A saved checkpoint's own generation_config.json (written from the config) round-trips the eos list.
TEST(CheckpointShards, SavedEosListRoundTrips) {
  const std::string d = tmp_dir("eos_rt") + "/ckpt";
  ModelConfig c = tiny_qwen3();
  c.eos_token_ids = {151645, 151643};
  c.bos_token_id = 151643;
  Transformer m(c);
  save_checkpoint(d, m);
  const json g = json::parse(spade::read_file(d + "/generation_config.json"));
  EXPECT_EQ(g.at("eos_token_id"), json::array({151645, 151643}));
  EXPECT_EQ(load_model_config(d).eos_token_ids, (std::vector<int64_t>{151645, 151643}));
  EXPECT_EQ(load_model_config(d).bos_token_id, 151643);
}

// ---- Every family: save -> load is bit-identical (fp32 single file, fp32 sharded, bf16). ----

struct FamilyCase {
  std::string name;
  ModelConfig config;
};

FamilyCase family(const std::string& name) {
  ModelConfig c;
  c.model_type = name;
  c.vocab_size = 61; c.hidden_size = 24; c.intermediate_size = 40; c.num_hidden_layers = 2;
  c.num_attention_heads = 4; c.num_key_value_heads = 2; c.rope_theta = 1e6; c.eos_token_ids = {5, 6};
  c.bos_token_id = 1;
  if (name == "llama") {  // Llama 3.1-style RoPE scaling, untied head, no biases
    c.rope_theta = 500000.0;
    c.rope_scaling.rope_type = "llama3";
    c.rope_scaling.factor = 8.0;
    c.rope_scaling.low_freq_factor = 1.0;
    c.rope_scaling.high_freq_factor = 4.0;
    c.rope_scaling.original_max_position_embeddings = 64;
    c.tie_word_embeddings = false;
  } else if (name == "qwen2") {  // q/k/v biases, tied embeddings
    c.attention_bias = true;
    c.tie_word_embeddings = true;
  } else if (name == "qwen3") {  // q/k norms, head_dim 8 != hidden / heads = 6
    c.head_dim = 8; c.qk_norm = true; c.tie_word_embeddings = false;
  } else if (name == "qwen3_moe") {  // 4 experts, top-2, layer 1 dense
    c.head_dim = 8; c.qk_norm = true; c.tie_word_embeddings = false;
    c.num_experts = 4; c.num_experts_per_tok = 2; c.moe_intermediate_size = 12; c.norm_topk_prob = true;
    c.mlp_only_layers = {1};
  }
  return {name, c};
}

class FamilyRoundTrip : public ::testing::TestWithParam<std::string> {};

TEST_P(FamilyRoundTrip, SaveLoadIsBitIdentical) {
  const FamilyCase fc = family(GetParam());
  Transformer m(fc.config);
  randomize(m, 21);
  const torch::Tensor logits = logits_of(m);
  for (uint64_t shard : {kDefaultMaxShardSize, uint64_t{2048}}) {
    const std::string d = tmp_dir(fc.name + "_" + std::to_string(shard)) + "/ckpt";
    CheckpointSaveOptions o;
    o.max_shard_size = shard;
    save_checkpoint(d, m, o);
    EXPECT_EQ(fs::exists(d + "/model.safetensors.index.json"), shard == 2048) << d;
    Transformer back = load_checkpoint(d);
    EXPECT_EQ(back->config().to_json(), m->config().to_json()) << d;
    expect_same_parameters(m, back);
    EXPECT_TRUE(torch::equal(logits, logits_of(back))) << d;
  }
  const std::string d = tmp_dir(fc.name + "_bf16") + "/ckpt";
  CheckpointSaveOptions o;
  o.dtype = "bfloat16";
  save_checkpoint(d, m, o);
  Transformer back = load_checkpoint(d, torch::kBFloat16);
  for (const auto& p : m->named_parameters())
    EXPECT_TRUE(torch::equal(p.value().to(torch::kBFloat16), back->named_parameters()[p.key()])) << p.key();
}

INSTANTIATE_TEST_SUITE_P(Checkpoint, FamilyRoundTrip, ::testing::Values("llama", "qwen2", "qwen3", "qwen3_moe"),
                         [](const auto& info) { return info.param; });

// An fp16 checkpoint (F16 tensors, torch_dtype float16, as HF fp16 exports) loads into float32 with
// each value the fp16 rounding of the original, computed independently by torch's half conversion;
// loaded as float16 it is bit-identical to the F16 data.
TEST(CheckpointShards, Fp16CheckpointLoads) {
  const std::string d = tmp_dir("fp16") + "/ckpt";
  Transformer m(tiny_qwen3());
  randomize(m, 31);
  save_checkpoint(d, m);
  std::map<std::string, at::Tensor> half;
  for (const auto& [name, t] : read_safetensors(d + "/model.safetensors")) half[name] = t.to(torch::kHalf);
  write_safetensors(d + "/model.safetensors", half);
  json cfg = json::parse(spade::read_file(d + "/config.json"));
  cfg["torch_dtype"] = "float16";
  spade::write_file_atomic(d + "/config.json", cfg.dump());
  EXPECT_EQ(SafetensorsFile::open(d + "/model.safetensors")->entry("model.norm.weight").dtype, "F16");
  EXPECT_EQ(load_model_config(d).torch_dtype, "float16");

  Transformer as_fp32 = load_checkpoint(d);
  Transformer as_fp16 = load_checkpoint(d, torch::kHalf);
  bool rounded = false;  // the test means something only if fp16 actually changed some values
  for (const auto& p : m->named_parameters()) {
    const at::Tensor expected = p.value().to(torch::kHalf).to(torch::kFloat);
    const at::Tensor got = as_fp32->named_parameters()[p.key()];
    EXPECT_EQ(got.scalar_type(), torch::kFloat) << p.key();
    EXPECT_TRUE(torch::equal(got, expected)) << p.key();
    EXPECT_TRUE(torch::equal(as_fp16->named_parameters()[p.key()], p.value().to(torch::kHalf))) << p.key();
    rounded = rounded || !torch::equal(expected, p.value());
  }
  EXPECT_TRUE(rounded);
}

// A broken index: a non-string weight_map entry, or a shard file that is missing, is an error naming it.
TEST(CheckpointShards, BrokenIndexErrorsNameTheFile) {
  const std::string d = tmp_dir("badindex") + "/ckpt";
  Transformer m(tiny_qwen3());
  CheckpointSaveOptions o;
  o.max_shard_size = 8192;  // 4 shards (see SplitsByCumulativeTensorBytesAndLoadsBitIdentically)
  save_checkpoint(d, m, o);
  const std::string index_path = d + "/model.safetensors.index.json";
  const json index = json::parse(spade::read_file(index_path));

  json bad = index;
  bad["weight_map"]["model.norm.weight"] = 4;
  spade::write_file_atomic(index_path, bad.dump());
  std::string e = error_of([&] { load_checkpoint(d); });
  EXPECT_NE(e.find(index_path + ": weight_map entry 'model.norm.weight' must be a file name"), std::string::npos) << e;

  spade::write_file_atomic(index_path, index.dump());
  fs::remove(d + "/model-00003-of-00004.safetensors");
  e = error_of([&] { load_checkpoint(d); });
  EXPECT_NE(e.find(d + "/model-00003-of-00004.safetensors: cannot open"), std::string::npos) << e;
}

// The streaming writer (policy/checkpoint_writer.h), fed the parameters in reverse order as ZeRO-3
// gathers would hand them in any order, writes the same files, byte for byte, as save_checkpoint of the
// whole model: the 4-shard split of SplitsByCumulativeTensorBytesAndLoadsBitIdentically and bf16.
TEST(CheckpointShards, StreamedWriterInAnyOrderEqualsSaveCheckpoint) {
  Transformer m(tiny_qwen3());
  randomize(m, 41);
  for (const std::string dtype : {"float32", "bfloat16"}) {
    CheckpointSaveOptions o;
    o.max_shard_size = dtype == "float32" ? 8192 : 4096;
    o.dtype = dtype;
    const std::string whole = tmp_dir("whole_" + dtype) + "/ckpt", streamed = tmp_dir("streamed_" + dtype) + "/ckpt";
    save_checkpoint(whole, m, o);
    const auto params = m->named_parameters();
    CheckpointWriter::ParameterShapes shapes;
    for (const auto& p : params) shapes.emplace_back(p.key(), p.value().sizes().vec());
    CheckpointWriter w(streamed, m->config(), shapes, o);
    for (size_t i = params.size(); i-- > 0;) w.write(params[i].key(), params[i].value());
    EXPECT_FALSE(fs::exists(streamed));
    w.commit();
    const std::vector<std::string> files = files_named(whole, "");
    EXPECT_EQ(files, files_named(streamed, ""));
    EXPECT_EQ(files_named(streamed, ".safetensors").size(), 4u) << dtype;
    for (const std::string& f : files)
      EXPECT_EQ(spade::read_file(whole + "/" + f), spade::read_file(streamed + "/" + f)) << dtype << " " << f;
  }
}

// A streamed save that misses a parameter, names a foreign one or gets a wrong shape fails naming it,
// publishes nothing and leaves an earlier checkpoint in `dir` as it was.
TEST(CheckpointShards, StreamedWriterFailureLeavesTheEarlierCheckpoint) {
  const std::string d = tmp_dir("streamed_fail") + "/ckpt";
  Transformer m(tiny_qwen3());
  randomize(m, 43);
  save_checkpoint(d, m);
  const std::string before = spade::read_file(d + "/model.safetensors");
  const auto params = m->named_parameters();
  CheckpointWriter::ParameterShapes shapes;
  for (const auto& p : params) shapes.emplace_back(p.key(), p.value().sizes().vec());
  {
    CheckpointWriter w(d, m->config(), shapes, {});
    EXPECT_NE(error_of([&] { w.write("lm_head.weight", torch::zeros({50, 16})); })
                  .find("parameter 'lm_head.weight' is not one of the model's"),
              std::string::npos);
    EXPECT_NE(error_of([&] { w.write("model.norm.weight", torch::zeros({8})); })
                  .find("tensor 'model.norm.weight' has shape [8], planned [16]"),
              std::string::npos);
    for (size_t i = 1; i < params.size(); ++i) w.write(params[i].key(), torch::zeros_like(params[i].value()));
    const std::string e = error_of([&] { w.commit(); });
    EXPECT_NE(e.find("tensor '" + params[0].key() + "' was never written"), std::string::npos) << e;
  }
  EXPECT_FALSE(fs::exists(d + ".tmp"));
  EXPECT_EQ(spade::read_file(d + "/model.safetensors"), before);
}
