// GenerationSession (persistent KV cache across turns) and stop strings.
// A session turn must sample exactly what one-shot generate() samples on the full history with the
// same seed (tokens equal, logprobs within 1e-5), prefill each token exactly once, and its logprobs
// must equal a teacher-forced recompute (TIS ratio 1).
#include <ATen/Parallel.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <memory>
#include <set>

#include "common/error.h"
#include "rollout/sampler.h"
#include "tests/testing/random_model.h"

using namespace spade;
using policy::ModelConfig;
using policy::Transformer;
using rollout::FinishReason;
using rollout::GenerationResult;
using rollout::GenerationSession;
using rollout::SamplingParams;

namespace {

Transformer model(const std::string& type = "qwen3") { return fixtures::random_model(type); }

SamplingParams sampling(int max_new) {
  SamplingParams p;
  p.temperature = 1.0;  // full distribution: any numeric drift would show up as a different draw
  p.top_k = 0;
  p.top_p = 1.0;
  p.max_new_tokens = max_new;
  return p;
}

// Teacher-forced logprobs of `tokens` after `prefix` at temperature t.
std::vector<float> teacher_forced(Transformer& m, const std::vector<int64_t>& prefix, const std::vector<int64_t>& tokens,
                                  double t) {
  torch::NoGradGuard ng;
  std::vector<int64_t> seq = prefix;
  seq.insert(seq.end(), tokens.begin(), tokens.end());
  const int64_t n = seq.size();
  auto h = m->forward(torch::tensor(seq).view({1, n}), torch::arange(n).view({1, n}));
  auto logits = m->lm_head(h[0]).narrow(0, prefix.size() - 1, tokens.size());
  auto lp = policy::token_logprobs(logits, torch::tensor(tokens), t).contiguous();
  return std::vector<float>(lp.data_ptr<float>(), lp.data_ptr<float>() + lp.numel());
}

void expect_same(const std::vector<GenerationResult>& a, const std::vector<GenerationResult>& b, const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].tokens, b[i].tokens) << what << " seq " << i;
    EXPECT_EQ(a[i].finish_reason, b[i].finish_reason) << what << " seq " << i;
    ASSERT_EQ(a[i].logprobs.size(), b[i].logprobs.size());
    for (size_t t = 0; t < a[i].logprobs.size(); ++t) EXPECT_NEAR(a[i].logprobs[t], b[i].logprobs[t], 1e-5) << what;
  }
}

}  // namespace

// Runs with decode steps through forward() (the CPU decode kernel) and through DecodeGraph's fixed-shape
// step (what CUDA replays as a graph): the parked K/V of finished rows come from either.
class SessionTurns : public ::testing::TestWithParam<SamplingParams::DecodeGraphMode> {};

TEST_P(SessionTurns, TurnsEqualFullReprefillAndPrefillEachTokenOnce) {
  for (std::string type : {"llama", "qwen2", "qwen3"}) {
    Transformer m = model(type);
    GenerationSession session(m);
    const std::vector<std::vector<int64_t>> prompts = {{1, 5, 9}, {2, 3, 4, 5, 6, 7, 8}, {30}};
    std::vector<size_t> ids;
    for (auto& p : prompts) ids.push_back(session.add_sequence(p));
    SamplingParams p = sampling(5);
    p.stop_token_ids = {4};
    p.decode_graph = GetParam();

    // Turn 1 (max_batch 2: continuous batching, the third sequence joins mid-way).
    auto s1 = session.generate(ids, p, 9, 2);
    expect_same(s1, rollout::generate(m, prompts, p, 9, 2), type + " turn 1");

    // Observations of different lengths (middle padding between cached history and new tokens).
    const std::vector<std::vector<int64_t>> obs = {{11, 12, 13}, {14}, {15, 16, 17, 18, 19, 20}};
    for (size_t i = 0; i < ids.size(); ++i) session.append(ids[i], obs[i]);

    // Turn 2: a subset, in another order, one slot -> the stream index follows the call's order.
    const std::vector<size_t> sub = {ids[2], ids[0]};
    auto s2 = session.generate(sub, p, 10, 1);
    {
      std::vector<std::vector<int64_t>> hist;
      for (size_t a = 0; a < sub.size(); ++a) {
        const auto& full = session.tokens(sub[a]);
        hist.emplace_back(full.begin(), full.end() - s2[a].tokens.size());
      }
      expect_same(s2, rollout::generate(m, hist, p, 10, 1), type + " turn 2");
      // Rollout logprobs equal the teacher-forced recompute over the whole history.
      for (size_t a = 0; a < sub.size(); ++a) {
        auto tf = teacher_forced(m, hist[a], s2[a].tokens, p.temperature);
        for (size_t t = 0; t < tf.size(); ++t) EXPECT_NEAR(tf[t], s2[a].logprobs[t], 1e-5) << type << " " << a << "," << t;
      }
    }

    // Turn 3: per-sequence caps, one of them 0 (left unchanged).
    for (size_t i = 0; i < ids.size(); ++i) session.append(ids[i], {21, 22});
    std::vector<std::vector<int64_t>> hist;
    for (size_t id : ids) hist.push_back(session.tokens(id));
    const size_t before1 = session.tokens(ids[1]).size();
    auto s3 = session.generate(ids, p, 11, 3, {3, 0, 4});
    EXPECT_TRUE(s3[1].tokens.empty());
    EXPECT_EQ(s3[1].finish_reason, FinishReason::kLength);
    EXPECT_EQ(session.tokens(ids[1]).size(), before1);
    SamplingParams p3 = p, p4 = p;
    p3.max_new_tokens = 3;
    p4.max_new_tokens = 4;
    auto r3 = rollout::generate(m, hist, p3, 11, 3), r4 = rollout::generate(m, hist, p4, 11, 3);
    expect_same({s3[0]}, {r3[0]}, type + " turn 3 cap 3");
    expect_same({s3[2]}, {r4[2]}, type + " turn 3 cap 4");

    // Each token is fed through the model exactly once; only each sequence's last sampled token and
    // tokens appended after it are pending.
    int64_t cached = 0;
    for (size_t id : ids) cached += session.cached_tokens(id);
    EXPECT_EQ(session.forwarded_tokens(), cached);
    EXPECT_EQ(session.cached_tokens(ids[0]), static_cast<int64_t>(session.tokens(ids[0]).size()) - 1);
    EXPECT_EQ(session.cached_tokens(ids[1]), static_cast<int64_t>(session.tokens(ids[1]).size()) - 1 - 3);

    session.release(ids[0]);
    EXPECT_THROW(session.tokens(ids[0]), spade::Error);
    EXPECT_THROW(session.generate({ids[0]}, p, 1), spade::Error);
    EXPECT_THROW(session.generate({ids[1], ids[1]}, p, 1), spade::Error);
    EXPECT_THROW(session.add_sequence({}), spade::Error);
  }
}

INSTANTIATE_TEST_SUITE_P(DecodeSteps, SessionTurns,
                         ::testing::Values(SamplingParams::DecodeGraphMode::kOff, SamplingParams::DecodeGraphMode::kOn),
                         [](const ::testing::TestParamInfo<SamplingParams::DecodeGraphMode>& info) {
                           return std::string(info.param == SamplingParams::DecodeGraphMode::kOn ? "graph" : "forward");
                         });

TEST(Session, GreedyTurnsEqualArgmaxOfFullForward) {
  Transformer m = model();
  GenerationSession session(m);
  size_t a = session.add_sequence({3, 4, 5, 6}), b = session.add_sequence({7});
  SamplingParams g;
  g.temperature = 0;
  g.max_new_tokens = 4;
  for (int turn = 0; turn < 3; ++turn) {
    std::vector<std::vector<int64_t>> hist = {session.tokens(a), session.tokens(b)};
    auto out = session.generate({a, b}, g, 0, 2);
    auto ref = rollout::generate(m, hist, g, 0, 2);
    expect_same(out, ref, "greedy turn " + std::to_string(turn));
    session.append(a, {static_cast<int64_t>(turn + 1)});
    session.append(b, {9, 10, static_cast<int64_t>(turn + 20)});
  }
}

TEST(StopStrings, StopOnDecodedTextAndKeepWholeTokens) {
  Transformer m = model();
  // A fake detokenizer: id -> one letter; id 36 -> "xy" (two bytes, so a string can end mid-token).
  auto detok = [](const std::vector<int64_t>& ids) {
    std::string s;
    for (int64_t id : ids) s += id == 36 ? std::string("xy") : std::string(1, static_cast<char>('A' + id % 26));
    return s;
  };
  const std::vector<std::vector<int64_t>> prompts = {{1, 5, 9}, {2, 3, 4, 5, 6, 7, 8}, {30}};
  SamplingParams g;
  g.temperature = 0;
  g.max_new_tokens = 12;
  auto ref = rollout::generate(m, prompts, g, 1);
  // The text of prompt 1's greedy tokens 2..3 as a stop string: every prompt must stop at the first
  // token whose text completes it.
  const std::string stop = detok({ref[1].tokens[2], ref[1].tokens[3]});
  SamplingParams p = g;
  p.stop_strings = {stop, "never-spelled"};
  p.detokenize = detok;
  auto out = rollout::generate(m, prompts, p, 1);
  for (size_t i = 0; i < prompts.size(); ++i) {
    size_t expect = ref[i].tokens.size();
    for (size_t k = 1; k <= ref[i].tokens.size(); ++k)
      if (detok(std::vector<int64_t>(ref[i].tokens.begin(), ref[i].tokens.begin() + k)).find(stop) != std::string::npos) {
        expect = k;
        break;
      }
    EXPECT_EQ(out[i].tokens, std::vector<int64_t>(ref[i].tokens.begin(), ref[i].tokens.begin() + expect)) << i;
    const bool stopped = expect < ref[i].tokens.size() ||
                         detok(ref[i].tokens).find(stop) != std::string::npos;
    EXPECT_EQ(out[i].finish_reason, stopped ? FinishReason::kStop : FinishReason::kLength) << i;
    EXPECT_EQ(out[i].stop_string, stopped ? stop : "") << i;
  }
  EXPECT_LE(out[1].tokens.size(), 4u);
  SamplingParams bad = g;
  bad.stop_strings = {"x"};
  EXPECT_THROW(rollout::generate(m, prompts, bad, 1), spade::Error);  // no detokenize
  bad.detokenize = detok;
  bad.stop_strings = {""};
  EXPECT_THROW(rollout::generate(m, prompts, bad, 1), spade::Error);
}

// The prefill budget bounds rows x (cached + new) columns of each admission group (SamplerStats) and
// does not change what is sampled. Prompts of 5, 8, 11, 14, 17, 20 tokens, nothing cached, 6 slots.
// Groups by hand: a group grows while (rows + 1) x (longest prompt so far) <= budget.
TEST(Session, PrefillBudgetSplitsAdmissionWithoutChangingResults) {
  Transformer m = model();
  std::vector<std::vector<int64_t>> prompts;
  for (int i = 0; i < 6; ++i) prompts.push_back(std::vector<int64_t>(5 + 3 * i, 1 + i));
  SamplingParams p = sampling(4);
  rollout::SamplerStats st;
  auto all = rollout::generate(m, prompts, p, 3, 6, &st);
  // Default budget 16384: one group of 6 rows x 20 columns = 120.
  EXPECT_EQ(st.prefills, 1);
  EXPECT_EQ(st.peak_prefill_tokens, 120);
  p.max_prefill_tokens = 40;
  expect_same(rollout::generate(m, prompts, p, 3, 6, &st), all, "budget 40");
  // {5, 8, 11}: 3 x 11 = 33 (adding 14 would make 4 x 14 = 56 > 40); {14, 17}: 2 x 17 = 34 (3 x 20 = 60
  // > 40); {20}: 20. Three groups, the largest 34 <= 40.
  EXPECT_EQ(st.prefills, 3);
  EXPECT_EQ(st.peak_prefill_tokens, 34);
  p.max_prefill_tokens = 1;  // one sequence per prefill (a lone sequence is admitted over the budget)
  expect_same(rollout::generate(m, prompts, p, 3, 6, &st), all, "budget 1");
  EXPECT_EQ(st.prefills, 6);
  EXPECT_EQ(st.peak_prefill_tokens, 20);  // the longest prompt, alone
}

// With a decode graph, finished rows stay in the batch until a quarter of it has finished (fewer
// storage replacements, so fewer captures): 8 sequences with two stop tokens finish at scattered steps.
// Results, parked caches and the next turn must equal those of decoding through forward(), where
// finished rows leave at once.
TEST(Session, DeferredRowRemovalOfTheGraphPathChangesNothing) {
  Transformer m = model("qwen2");
  std::vector<std::unique_ptr<GenerationSession>> sessions;
  for (int i = 0; i < 2; ++i) sessions.push_back(std::make_unique<GenerationSession>(m));
  std::vector<std::vector<GenerationResult>> out(2);
  for (int i = 0; i < 2; ++i) {
    SamplingParams p = sampling(12);
    p.stop_token_ids = {4, 9, 17};
    p.decode_graph = i == 0 ? SamplingParams::DecodeGraphMode::kOff : SamplingParams::DecodeGraphMode::kOn;
    std::vector<size_t> ids;
    for (int64_t s = 0; s < 8; ++s) ids.push_back(sessions[i]->add_sequence({s + 1, 2 * s + 3, 30 - s}));
    out[i] = sessions[i]->generate(ids, p, 5, /*max_batch=*/8);
    for (size_t id : ids) sessions[i]->append(id, {static_cast<int64_t>(id % 5 + 10), 11});
    auto second = sessions[i]->generate(ids, p, 6, 8);
    out[i].insert(out[i].end(), second.begin(), second.end());
  }
  expect_same(out[1], out[0], "graph vs forward");
  std::set<size_t> lengths;
  for (size_t a = 0; a < 8; ++a) {
    lengths.insert(out[0][a].tokens.size());
    EXPECT_EQ(sessions[1]->cached_tokens(a), sessions[0]->cached_tokens(a)) << a;
    EXPECT_EQ(sessions[1]->tokens(a), sessions[0]->tokens(a)) << a;
  }
  EXPECT_GE(lengths.size(), 3u) << "the rows should finish at different steps for this test to mean anything";
}
