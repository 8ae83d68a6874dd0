// Tool-use episodes end to end (issue 21): the agent sees the environment's tools through the chat
// template, its tool calls are parsed here, stepped in the environment in order, and their results come
// back as one tool turn, token-in/token-out.
//
// A tiny policy is first taught (a few hundred Adam steps on the exact token sequence) to reply with
// chosen texts, so greedy decoding replays them: a turn with two well-formed calls, then
// <answer>done</answer>; and, from another reset seed, a turn with one malformed call. The expected
// token stream is built independently of play_episodes: the opening from tool_use_opening with the
// tools written out here by hand (in the order the program declares them), every tool result worked out
// by hand from the program below and the base class (envsandbox/envd_prelude.cpp ToolUseEnv.step:
// "<result>" + the advance suffix "\n\n[user] All steps are done. Answer <answer>done</answer>." once
// the last criterion holds), and the tool turn from ChatTemplate::ids_for_tool_results.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "common/error.h"
#include "envsandbox/sandbox.h"
#include "policy/chat_formats.h"
#include "rollout/episode.h"
#include "rollout/prompts.h"
#include "tests/testing/tiny_policy.h"

using namespace spade;

namespace {

// The counter starts at 10 + seed; "add" adds n, "read" reads it; the one instruction is met once the
// counter is 15 + seed and it was read.
const char* kCounterEnv = R"PY(
class CounterEnv(ToolUseEnv):
    def reset(self, seed=None):
        self.turn = 0
        self.base = 10 + (seed or 0)
        self._state = {"count": self.base, "log": []}
        self._tools = {
            "add": {"description": "Add n to the counter.",
                    "parameters": {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}},
            "read": {"description": "Read the counter.", "parameters": {"type": "object", "properties": {}}},
        }
        self._user_messages = ["The counter is at %d. Add 5 to it, then read it." % self.base]
        self._message_criteria = [lambda s: s["count"] == self.base + 5 and "read" in s["log"]]
        self._current_msg = 0
        self._expected_answer = "done"
        return "[user] " + self._user_messages[0], {}

    def tool_add(self, n):
        self._state["count"] += int(n)
        self._state["log"].append("add")
        return "ok"

    def tool_read(self):
        self._state["log"].append("read")
        return str(self._state["count"])
)PY";

std::vector<nlohmann::ordered_json> counter_tools() {
  return {nlohmann::ordered_json::parse(
              R"({"type": "function", "function": {"name": "add", "description": "Add n to the counter.", "parameters": {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}}})"),
          nlohmann::ordered_json::parse(
              R"({"type": "function", "function": {"name": "read", "description": "Read the counter.", "parameters": {"type": "object", "properties": {}}}})")};
}

std::vector<int64_t> cat(std::vector<int64_t> a, const std::vector<int64_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// One memorised episode: the token sequence and which of its positions the policy samples.
struct Script {
  std::vector<int64_t> tokens;
  std::vector<bool> sampled;
  void context(const std::vector<int64_t>& ids) {
    tokens.insert(tokens.end(), ids.begin(), ids.end());
    sampled.insert(sampled.end(), ids.size(), false);
  }
  void reply(const std::vector<int64_t>& ids) {
    tokens.insert(tokens.end(), ids.begin(), ids.end());
    sampled.insert(sampled.end(), ids.size(), true);
  }
};

// Adam on the sampled positions of every script until greedy decoding reproduces each of them (argmax
// at every sampled position). Returns false if it never does.
bool memorise(policy::Transformer& model, const std::vector<Script>& scripts) {
  torch::manual_seed(3);
  torch::optim::Adam opt(model->parameters(), torch::optim::AdamOptions(3e-3));
  for (int step = 0; step < 600; ++step) {
    bool all = true;
    opt.zero_grad();
    for (const Script& s : scripts) {
      const int64_t n = static_cast<int64_t>(s.tokens.size());
      torch::Tensor ids = torch::tensor(s.tokens, torch::kInt64).unsqueeze(0);
      torch::Tensor pos = torch::arange(n, torch::kInt64).unsqueeze(0);
      torch::Tensor logits = model->lm_head(model->forward(ids, pos))[0].slice(0, 0, n - 1);
      std::vector<int64_t> rows;
      for (int64_t t = 1; t < n; ++t)
        if (s.sampled[t]) rows.push_back(t - 1);
      torch::Tensor r = torch::tensor(rows, torch::kInt64);
      torch::Tensor target = ids[0].slice(0, 1, n).index_select(0, r);
      torch::Tensor l = logits.index_select(0, r);
      torch::nn::functional::cross_entropy(l, target).backward();
      all = all && l.argmax(-1).equal(target);
    }
    if (all) return true;
    opt.step();
  }
  return false;
}

}  // namespace

TEST(ToolEpisode, CallsReachTheEnvironmentAndComeBackAsOneToolTurn) {
  fixtures::TinyPolicy p = fixtures::make_tiny_policy(/*seed=*/5, /*hidden=*/64, /*layers=*/2);
  const policy::Tokenizer& tok = p.tokenizer;
  const policy::ChatTemplate& chat = *p.chat;
  const int64_t eos = chat.eos_id();
  auto enc = [&](const std::string& s) { return tok.encode(s); };

  auto opening = [&](int seed) {
    const std::string obs = "[user] The counter is at " + std::to_string(10 + seed) + ". Add 5 to it, then read it.";
    return chat.render(policy::tool_use_opening(chat.format(), rollout::agent_tool_system_prompt(),
                                                rollout::agent_tool_first_turn(obs, ""), counter_tools()),
                       /*add_generation_prompt=*/true);
  };
  // Seed 0: two calls in one turn (Qwen's JSON form), then the answer.
  const std::string two_calls =
      "<tool_call>\n{\"name\": \"add\", \"arguments\": {\"n\": 5}}\n</tool_call>\n"
      "<tool_call>\n{\"name\": \"read\", \"arguments\": {}}\n</tool_call>";
  // By hand: add -> "ok" (the criterion needs the read too, so no suffix); read -> "15" and, the
  // criterion now holding, the base class's closing suffix.
  const std::vector<std::string> results = {"ok", "15\n\n[user] All steps are done. Answer <answer>done</answer>."};
  Script good;
  good.context(opening(0));
  good.reply(cat(enc(two_calls), {eos}));
  good.context(chat.ids_for_tool_results(results));
  good.reply(cat(enc("<answer>done</answer>"), {eos}));
  // Seed 1: one malformed call (the arguments object is not closed).
  const std::string malformed = "<tool_call>\n{\"name\": \"add\", \"arguments\": {\"n\": 5}\n</tool_call>";
  Script bad;
  bad.context(opening(1));
  bad.reply(cat(enc(malformed), {eos}));
  ASSERT_TRUE(memorise(p.model, {good, bad})) << "the tiny policy did not learn the scripted replies";

  envsandbox::EnvServer server;
  rollout::PolicyRef ref{p.model, tok, chat};
  rollout::EpisodeOptions o;
  o.sampling.temperature = 0;  // greedy: the memorised replies
  o.sampling.max_new_tokens = 200;
  o.max_turns = 3;
  o.context_tokens = 4096;
  rollout::EpisodeSpec spec{"counter", "api_orchestration", kCounterEnv, 0, ""};
  spec.tool_use = true;
  std::vector<rollout::EpisodeSpec> specs = {spec, spec};
  specs[1].seed = 1;
  specs[1].tool_use = true;
  rollout::EpisodeOptions o1 = o;
  const auto results_good = rollout::play_episodes(ref, server, {specs[0]}, o, 7);
  o1.max_turns = 1;  // the malformed turn and its tool turn only
  const auto results_bad = rollout::play_episodes(ref, server, {specs[1]}, o1, 7);

  const rollout::EpisodeResult& g = results_good.at(0);
  ASSERT_TRUE(g.failure.empty()) << g.failure;
  EXPECT_EQ(g.sample.tokens, good.tokens);  // the whole episode, token for token
  for (size_t t = 0; t < good.tokens.size() && t < g.sample.loss_mask.size(); ++t)
    EXPECT_EQ(g.sample.loss_mask[t], good.sampled[t] ? 1.0f : 0.0f) << "position " << t;
  EXPECT_EQ(g.tool_calls, 2);
  EXPECT_EQ(g.malformed_tool_calls, 0);
  EXPECT_EQ(g.actions, (std::vector<std::string>{"<tool_call>{\"arguments\":{\"n\":5},\"name\":\"add\"}</tool_call>",
                                                 "<tool_call>{\"arguments\":{},\"name\":\"read\"}</tool_call>",
                                                 "<answer>done</answer>"}));
  EXPECT_TRUE(g.terminated);
  EXPECT_EQ(g.reward, 1.0);  // _check_answer("done") holds only because both calls changed the state
  EXPECT_EQ(g.turns, 2);

  // The malformed call was stepped as written and answered with the base class's format error, as a
  // tool result; the episode then hit its turn limit (reward 0).
  const rollout::EpisodeResult& b = results_bad.at(0);
  ASSERT_TRUE(b.failure.empty()) << b.failure;
  EXPECT_EQ(b.tool_calls, 1);
  EXPECT_EQ(b.malformed_tool_calls, 1);
  ASSERT_EQ(b.actions.size(), 1u);
  EXPECT_EQ(b.actions[0], "<tool_call>{\"name\": \"add\", \"arguments\": {\"n\": 5}</tool_call>");
  ASSERT_GT(b.sample.tokens.size(), bad.tokens.size());
  EXPECT_EQ(std::vector<int64_t>(b.sample.tokens.begin(), b.sample.tokens.begin() + bad.tokens.size()), bad.tokens);
  const std::string tool_turn =
      tok.decode(std::vector<int64_t>(b.sample.tokens.begin() + bad.tokens.size(), b.sample.tokens.end()));
  EXPECT_EQ(tool_turn.rfind("\n<|im_start|>user\n<tool_response>\nFormat error: ", 0), 0u) << tool_turn;
  EXPECT_TRUE(b.truncated);
  EXPECT_EQ(b.reward, 0.0);
}

// A format without tool calling is a clear error naming it (issue 21).
TEST(ToolEpisode, FormatWithoutToolsIsAnErrorNamingIt) {
  try {
    policy::tool_use_opening(policy::ChatFormat::kMistral, "s", "u", counter_tools());
    FAIL() << "no error";
  } catch (const spade::Error& e) {
    EXPECT_NE(std::string(e.what()).find("mistral"), std::string::npos) << e.what();
  }
  EXPECT_THROW(policy::tool_use_opening(policy::ChatFormat::kLlama2, "s", "u", counter_tools()), spade::Error);
}
