// Tool-use training data (issue 21). The cold start's (trainer/warm_start.h): a demonstration plays a
// tool-use seed's solution() through the same opening and tool turns as a played episode
// (rollout/episode.h), so its tokens are checked against the chat template rendered independently here
// from a fresh instance of the program; the designer example asks for the variant the seed declares;
// the hint example uses the plan prompt. The GRPO update on such an episode: a positive advantage
// raises the logprob of its tool calls, and its tool results (loss mask 0) are context, never targets.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "common/atomic_file.h"
#include "envsandbox/game.h"
#include "envsandbox/sandbox.h"
#include "policy/chat_formats.h"
#include "rollout/prompts.h"
#include "tests/testing/tiny_policy.h"
#include "trainer/grpo_update.h"
#include "trainer/seed_envs.h"
#include "trainer/warm_start.h"

using namespace spade;

namespace {

trainer::SeedEnv smart_home() {
  const std::string dir = std::string(SPADE_SOURCE_DIR) + "/data/tooluse_seed_envs/state_modification/";
  return {"state_modification", "smart_home", dir + "smart_home.py", read_file(dir + "smart_home.py"),
          read_file(dir + "smart_home.hint.txt")};
}

std::vector<int64_t> span(const std::vector<int64_t>& v, int64_t begin, int64_t end) {
  return {v.begin() + begin, v.begin() + end};
}

}  // namespace

TEST(ToolUseWarmStart, DemonstrationIsTheSolutionAsAPlayedEpisode) {
  fixtures::TinyPolicy p = fixtures::make_tiny_policy();
  envsandbox::EnvServer server;
  const trainer::SeedEnv env = smart_home();
  int dropped = 0;
  const std::vector<rollout::Sample> demos = trainer::agent_demonstrations(p.ref(), server, env, 2, 25, &dropped);
  ASSERT_EQ(demos.size(), 2u);
  EXPECT_EQ(dropped, 0);
  for (int seed = 0; seed < 2; ++seed) {
    const rollout::Sample& d = demos[seed];
    EXPECT_EQ(d.reward, 1.0);
    // The opening, rendered here from an independent instance reset with the same seed.
    std::string reason;
    auto game = envsandbox::Game::open(server, env.code, 25, &reason);
    ASSERT_TRUE(game) << reason;
    const std::optional<std::string> obs = game->reset(seed, &reason);
    ASSERT_TRUE(obs) << reason;
    const nlohmann::ordered_json tools = game->tools(&reason).value();
    const std::vector<int64_t> opening = p.chat->render(
        policy::tool_use_opening(policy::ChatFormat::kChatML, rollout::agent_tool_system_prompt(),
                                 rollout::agent_tool_first_turn(*obs, ""),
                                 std::vector<nlohmann::ordered_json>(tools.begin(), tools.end())),
        true);
    ASSERT_GT(d.tokens.size(), opening.size());
    EXPECT_EQ(span(d.tokens, 0, static_cast<int64_t>(opening.size())), opening);
    // smart_home's solution: four tool calls, one per reply, then <answer>done</answer> (its hint file
    // lists the same five steps). Each call reply is a call span (loss mask 1), followed by its tool
    // result turn (loss mask 0) with exactly what the environment answers that call.
    const std::vector<std::string> solution = game->solution(&reason);
    ASSERT_EQ(solution.size(), 5u);
    ASSERT_EQ(d.tool_segments.size(), 8u);
    for (size_t c = 0; c < 4; ++c) {
      const rollout::ToolSegment& call = d.tool_segments[2 * c];
      const rollout::ToolSegment& result = d.tool_segments[2 * c + 1];
      EXPECT_EQ(call.kind, rollout::ToolSegment::Kind::kCall);
      EXPECT_EQ(result.kind, rollout::ToolSegment::Kind::kResult);
      std::vector<int64_t> expected_call = p.tokenizer.encode(solution[c]);
      expected_call.push_back(p.chat->eos_id());
      EXPECT_EQ(span(d.tokens, call.begin, call.end), expected_call) << "call " << c;
      for (int64_t t = call.begin; t < call.end; ++t) EXPECT_EQ(d.loss_mask[t], 1.0f);
      const envsandbox::GameStep step = game->step(solution[c]);
      EXPECT_EQ(span(d.tokens, result.begin, result.end), p.chat->ids_for_tool_results({step.obs})) << "result " << c;
      for (int64_t t = result.begin; t < result.end; ++t) EXPECT_EQ(d.loss_mask[t], 0.0f);
    }
    // The last reply: the answer and the end of turn, nothing after it.
    std::vector<int64_t> answer = p.tokenizer.encode("<answer>done</answer>");
    answer.push_back(p.chat->eos_id());
    EXPECT_EQ(span(d.tokens, static_cast<int64_t>(d.tokens.size() - answer.size()), static_cast<int64_t>(d.tokens.size())),
              answer);
    EXPECT_EQ(d.tool_segments.back().end + static_cast<int64_t>(answer.size()), static_cast<int64_t>(d.tokens.size()));
  }
}

TEST(ToolUseWarmStart, DesignerAndHintExamplesUseTheToolUsePrompts) {
  fixtures::TinyPolicy p = fixtures::make_tiny_policy();
  const trainer::SeedEnv env = smart_home();  // declares "Variant: execute"
  const rollout::Sample d = trainer::designer_example(p.ref(), env, std::string("A DOCUMENT"), "", 25);
  const std::vector<int64_t> prompt = p.chat->render(
      {{"system", rollout::designer_system_prompt(rollout::Setting::kToolUse)},
       {"user", rollout::designer_tool_user_prompt(rollout::find_skill("state_modification", rollout::Setting::kToolUse),
                                                    std::string("A DOCUMENT"), {}, 25, "execute")}},
      true);
  EXPECT_EQ(span(d.tokens, 0, static_cast<int64_t>(prompt.size())), prompt);
  EXPECT_EQ(d.loss_mask[prompt.size() - 1], 0.0f);
  EXPECT_EQ(d.loss_mask[prompt.size()], 1.0f);
  const rollout::Sample h = trainer::hint_example(p.ref(), env);
  const std::vector<int64_t> hint_prompt =
      p.chat->render({{"system", rollout::designer_system_prompt(rollout::Setting::kToolUse)},
                      {"user", rollout::hint_user_prompt(env.code, /*tool_use=*/true)}},
                     true);
  EXPECT_EQ(span(h.tokens, 0, static_cast<int64_t>(hint_prompt.size())), hint_prompt);
}

namespace {

// Teacher-forced logprob of every token of `s` under `model` (0 at position 0).
std::vector<float> token_logprobs(policy::Transformer& model, const rollout::Sample& s) {
  torch::NoGradGuard ng;
  const trainer::PackedBatch b = trainer::pack_micro_batches({&s}, 1 << 20)[0];
  auto [logp, ent] = trainer::sequence_logprobs(model, b, false);
  std::vector<float> out(s.tokens.size(), 0.0f);
  for (size_t t = 1; t < s.tokens.size(); ++t) out[t] = logp[0][t - 1].item<float>();
  return out;
}

double sum_over(const std::vector<float>& lp, const std::vector<rollout::ToolSegment>& segs,
                rollout::ToolSegment::Kind kind) {
  double sum = 0;
  for (const rollout::ToolSegment& g : segs)
    if (g.kind == kind)
      for (int64_t t = g.begin; t < g.end; ++t) sum += lp[t];
  return sum;
}

}  // namespace

TEST(ToolUseUpdate, PositiveAdvantageRaisesTheCallsAndToolResultsAreNoTargets) {
  fixtures::TinyPolicy p = fixtures::make_tiny_policy(9);
  envsandbox::EnvServer server;
  std::vector<rollout::Sample> demos = trainer::agent_demonstrations(p.ref(), server, smart_home(), 1, 25);
  ASSERT_EQ(demos.size(), 1u);
  rollout::Sample s = demos[0];
  // On-policy rollout logprobs on the sampled tokens (as the sampler records them), advantage +1.
  const std::vector<float> before = token_logprobs(p.model, s);
  for (size_t t = 0; t < s.tokens.size(); ++t) s.rollout_logprobs[t] = s.loss_mask[t] > 0 ? before[t] : 0.0f;
  s.advantage = 1.0;
  // The loss ignores what sits at mask-0 positions: scrambling the tool results' rollout logprobs
  // there leaves every gradient unchanged (bit for bit).
  auto grads = [&](const rollout::Sample& x) {
    fixtures::TinyPolicy q = fixtures::make_tiny_policy(9);
    const trainer::PackedBatch b = trainer::pack_micro_batches({&x}, 1 << 20)[0];
    auto [logp, ent] = trainer::sequence_logprobs(q.model, b, false);
    const double norm = trainer::global_normaliser(trainer::UpdateOptions{}.loss.agg_mode, {b.loss_mask});
    trainer::compute_policy_loss(logp, logp.detach(), b.rollout_logp, b.advantages, b.loss_mask, norm,
                                 trainer::UpdateOptions{}.loss, ent)
        .loss.backward();
    std::vector<torch::Tensor> g;
    for (auto& prm : q.model->parameters()) g.push_back(prm.grad().clone());
    return g;
  };
  rollout::Sample scrambled = s;
  for (const rollout::ToolSegment& g : s.tool_segments)
    if (g.kind == rollout::ToolSegment::Kind::kResult)
      for (int64_t t = g.begin; t < g.end; ++t) scrambled.rollout_logprobs[t] = -42.0f;
  const std::vector<torch::Tensor> g1 = grads(s), g2 = grads(scrambled);
  ASSERT_EQ(g1.size(), g2.size());
  double norm1 = 0;
  for (size_t i = 0; i < g1.size(); ++i) {
    EXPECT_TRUE(torch::equal(g1[i], g2[i])) << "parameter " << i;
    norm1 += g1[i].pow(2).sum().item<double>();
  }
  EXPECT_GT(norm1, 0.0);  // the won episode's replies carry a gradient
  // One SGD step of the update raises the logprob of the episode's tool calls (gradient ascent on A * logp).
  torch::optim::SGD opt(p.model->parameters(), torch::optim::SGDOptions(0.5));
  trainer::grpo_update(p.model, opt, {s}, {});
  const std::vector<float> after = token_logprobs(p.model, s);
  EXPECT_GT(sum_over(after, s.tool_segments, rollout::ToolSegment::Kind::kCall),
            sum_over(before, s.tool_segments, rollout::ToolSegment::Kind::kCall));
}
