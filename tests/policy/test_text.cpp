// config.json parsing, SentencePiece tokenizer training + exact round trip, ChatML token-in/token-out.
#include <gtest/gtest.h>

#include <filesystem>

#include "common/error.h"
#include "policy/chat_template.h"
#include "policy/model_config.h"
#include "policy/tokenizer.h"

using namespace spade::policy;
using nlohmann::json;

namespace {

json qwen3_json() {  // shape of Qwen3-0.6B's config.json (values trimmed)
  return json::parse(R"({"architectures":["Qwen3ForCausalLM"],"model_type":"qwen3","vocab_size":151936,
    "hidden_size":1024,"intermediate_size":3072,"num_hidden_layers":28,"num_attention_heads":16,
    "num_key_value_heads":8,"head_dim":128,"rms_norm_eps":1e-6,"rope_theta":1000000,"rope_scaling":null,
    "max_position_embeddings":40960,"tie_word_embeddings":true,"attention_bias":false,"hidden_act":"silu",
    "bos_token_id":151643,"eos_token_id":151645,"torch_dtype":"bfloat16"})");
}

std::string error_of(const json& j) {
  try {
    ModelConfig::from_json(j, "ckpt/config.json");
  } catch (const spade::Error& e) {
    return e.what();
  }
  return "";
}

// Shared tokenizer trained once per process on a small code-and-math corpus.
const Tokenizer& tok() {
  static Tokenizer t = [] {
    const std::string dir = std::string(SPADE_TEST_TMP) + "/policy_tok";
    std::filesystem::create_directories(dir);
    std::vector<std::string> text;
    for (int i = 0; i < 40; ++i) {
      text.push_back("def step(self, action):\n    if action == " + std::to_string(i) + ":\n        return obs, 1.0, True\n");
      text.push_back("The answer is \\boxed{" + std::to_string(i * 7) + "} because 3 + 4 = 7.\n");
      text.push_back("class GuessEnv:\n\tdef reset(self, seed=None):\n\t\treturn 'start', {}\n");
      text.push_back("for (int i = 0; i < n; ++i) { sum += a[i]; }  // C++\n");
    }
    Tokenizer::train(text, dir + "/tok", 400);
    return Tokenizer::load(dir + "/tok.model");
  }();
  return t;
}

}  // namespace

TEST(ModelConfig, ParsesQwen3) {
  auto c = ModelConfig::from_json(qwen3_json(), "config.json");
  EXPECT_EQ(c.head_size(), 128);           // explicit, not 1024/16 = 64
  EXPECT_EQ(c.kv_heads(), 8);
  EXPECT_TRUE(c.qk_norm);
  EXPECT_FALSE(c.attention_bias);
  EXPECT_EQ(c.eos_token_ids, std::vector<int64_t>{151645});
  EXPECT_EQ(c.rope_theta, 1e6);
  // Qwen3-0.6B: 596M parameters without the tied head (HF model card: 0.6B total, 0.44B non-embedding).
  EXPECT_EQ(c.num_parameters(), 596049920);
  auto back = ModelConfig::from_json(c.to_json(), "roundtrip");
  EXPECT_EQ(back.to_json(), c.to_json());
  EXPECT_EQ(c.to_json()["architectures"][0], "Qwen3ForCausalLM");
}

TEST(ModelConfig, DefaultsAndVariants) {
  json j = qwen3_json();
  j["model_type"] = "qwen2";
  j.erase("head_dim");
  j.erase("num_key_value_heads");
  j["eos_token_id"] = {1, 2};
  auto c = ModelConfig::from_json(j, "config.json");
  EXPECT_EQ(c.head_size(), 64);            // hidden / heads
  EXPECT_EQ(c.kv_heads(), 16);             // = heads
  EXPECT_TRUE(c.attention_bias);           // qwen2 always has q/k/v biases
  EXPECT_FALSE(c.o_proj_bias());
  EXPECT_EQ(c.eos_token_ids, (std::vector<int64_t>{1, 2}));
  j.erase("rope_theta");
  j["rope_parameters"] = {{"rope_type", "default"}, {"rope_theta", 5e6}};
  EXPECT_EQ(ModelConfig::from_json(j, "config.json").rope_theta, 5e6);
}

TEST(ModelConfig, ErrorsNameFileAndKey) {
  json j = qwen3_json();
  j.erase("rope_theta");
  EXPECT_NE(error_of(j).find("ckpt/config.json: missing 'rope_theta'"), std::string::npos) << error_of(j);
  j = qwen3_json();
  j.erase("hidden_size");
  EXPECT_NE(error_of(j).find("ckpt/config.json: missing required key 'hidden_size'"), std::string::npos);
  j = qwen3_json();
  j["model_type"] = "mistral";
  EXPECT_NE(error_of(j).find("'model_type' = 'mistral' is not supported"), std::string::npos);
  j = qwen3_json();
  j["vocab_size"] = "big";
  EXPECT_NE(error_of(j).find("key 'vocab_size' must be an integer"), std::string::npos);
  j = qwen3_json();
  j["num_key_value_heads"] = 3;
  EXPECT_NE(error_of(j).find("multiple of num_key_value_heads"), std::string::npos);
  j = qwen3_json();
  j["hidden_act"] = "gelu";
  EXPECT_NE(error_of(j).find("hidden_act"), std::string::npos);
  j = qwen3_json();
  j["rope_scaling"] = {{"rope_type", "yarn"}, {"factor", 4}};
  EXPECT_NE(error_of(j).find("'yarn' is not supported"), std::string::npos);
}

TEST(Tokenizer, ExactRoundTripOfCode) {
  const Tokenizer& t = tok();
  EXPECT_GT(t.vocab_size(), 256);
  EXPECT_EQ(t.pad_id(), kPadId);
  EXPECT_EQ(t.eos_id(), kEosId);
  const std::vector<std::string> samples = {
      "def f(x):\n    return {'a': [1, 2]}\n\n\n",
      "  leading spaces and trailing  \n\t\ttabs\t",
      "\\boxed{42} and \\boxed{ x + 1 }",
      "if (a) {\n  b();\n}\r\n",
      "unicode: ü € 漢字 🙂 and unseen bytes \x01\x7f",
      " ",
      "\n",
  };
  for (const auto& s : samples) {
    auto ids = t.encode(s);
    EXPECT_EQ(t.decode(ids), s) << "sample: " << s;
    for (auto id : ids) EXPECT_NE(id, kUnkId);
  }
  // Digits are split one per token.
  auto ids = t.encode("12345");
  EXPECT_EQ(ids.size(), 5u);
  EXPECT_THROW(t.decode({t.vocab_size()}), spade::Error);
}

TEST(Tokenizer, SpecialTokensAreSingleIdsButNotParsedFromText) {
  const Tokenizer& t = tok();
  const int64_t im_end = t.token_id(kImEnd);
  EXPECT_EQ(t.decode({im_end}), kImEnd);
  // Text containing the special string encodes as ordinary text (no injection), and round-trips.
  auto ids = t.encode("say <|im_end|> now");
  EXPECT_EQ(std::count(ids.begin(), ids.end(), im_end), 0);
  EXPECT_EQ(t.decode(ids), "say <|im_end|> now");
  auto parsed = t.encode("say <|im_end|> now", /*parse_special=*/true);
  EXPECT_EQ(std::count(parsed.begin(), parsed.end(), im_end), 1);
  EXPECT_THROW(t.token_id("<|not_a_token|>"), spade::Error);
  EXPECT_THROW(Tokenizer::load("/nonexistent/tok.model"), spade::Error);
}

TEST(ChatTemplate, AppendedTurnsEqualFullRendering) {
  const Tokenizer& t = tok();
  ChatTemplate chat(t);
  std::vector<ChatMessage> convo = {{"system", "You play games."}, {"user", "Guess a number.\n"}};
  auto ids = chat.render(convo, /*add_generation_prompt=*/true);
  EXPECT_EQ(t.decode(ids), chat.render_text(convo, true));
  EXPECT_EQ(t.decode(ids), "<|im_start|>system\nYou play games.<|im_end|>\n<|im_start|>user\nGuess a number.\n"
                           "<|im_end|>\n<|im_start|>assistant\n");
  // The assistant's sampled turn ends with <|im_end|>; then the environment's reply is appended.
  const std::string answer = "I guess \\boxed{7}";
  auto sampled = t.encode(answer);
  sampled.push_back(chat.eos_id());
  std::vector<int64_t> incremental = ids;
  incremental.insert(incremental.end(), sampled.begin(), sampled.end());
  auto user = chat.ids_for_user_turn("Too low. <|im_start|>");
  incremental.insert(incremental.end(), user.begin(), user.end());

  convo.push_back({"assistant", answer});
  convo.push_back({"user", "Too low. <|im_start|>"});
  EXPECT_EQ(incremental, chat.render(convo, true));  // token-level equality: history never re-tokenized
  EXPECT_EQ(t.decode(incremental), chat.render_text(convo, true));
  EXPECT_EQ(std::count(incremental.begin(), incremental.end(), chat.im_start_id()), 5);
}
