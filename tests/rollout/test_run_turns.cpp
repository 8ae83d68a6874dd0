// GenerationSession::run_turns: continuous batching across turns (issue 4: finished sequences free their
// slot and "agent turns of many episodes" fill it). A sequence's next turn, queued by the turn-end
// callback, must start while other sequences are still mid-turn, and every turn must sample exactly what
// the same turn samples through GenerationSession::generate() on its own (same stream): scheduling
// changes when a turn runs, never what it samples.
//
// The schedules below are derived by hand from the sampler's round structure (sampler.h, SamplerStats::
// rounds: each running row gets one token per round; a turn queued at the end of round j is prefilled
// and samples its first token at round j + 1 when a slot is free). With no stop token every turn samples
// exactly its cap.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <map>

#include "common/error.h"
#include "rollout/sampler.h"
#include "tests/testing/random_model.h"

using namespace spade;
using rollout::GenerationResult;
using rollout::GenerationSession;
using rollout::SamplerStats;
using rollout::SamplingParams;
using rollout::sampling_stream;

namespace {

SamplingParams sampling() {
  SamplingParams p;
  p.temperature = 1.0;  // full distribution: a numeric difference would show up as a different draw
  p.top_k = 0;
  p.top_p = 1.0;
  return p;  // no stop tokens: every turn samples exactly its cap
}

const std::vector<int64_t> kPromptA = {5, 9, 2, 7, 11, 3};
const std::vector<int64_t> kPromptB = {4, 8, 15, 16, 23, 32, 6, 1, 19};  // ids < 37 (random_model vocab)
const std::vector<int64_t> kObservation = {12, 13, 14};
constexpr uint64_t kSeed = 77;
// Sequence A: 3 turns of 2 tokens, an observation appended between turns. Sequence B: 1 turn of 6.
constexpr int kTurnsA = 3, kCapA = 2, kCapB = 6;
uint64_t stream_a(int turn) { return sampling_stream(kSeed + turn, 0); }
uint64_t stream_b() { return sampling_stream(kSeed + 100, 1); }

struct Played {
  std::vector<GenerationResult> a;  // A's turns
  GenerationResult b;
  std::vector<int64_t> tokens_a, tokens_b;  // final histories
  SamplerStats stats;
  std::vector<std::string> order;  // turn ends, in order: "a0", "b", "a1", ...
};

Played play(policy::Transformer& m, int max_batch,
            SamplingParams::DecodeGraphMode graph = SamplingParams::DecodeGraphMode::kAuto) {
  GenerationSession s(m);
  SamplingParams params = sampling();
  params.decode_graph = graph;
  const size_t a = s.add_sequence(kPromptA), b = s.add_sequence(kPromptB);
  Played out;
  s.run_turns({{a, kCapA, stream_a(0)}, {b, kCapB, stream_b()}}, params, max_batch,
              [&](const GenerationSession::TurnRequest& t,
                  GenerationResult&& r) -> std::optional<GenerationSession::TurnRequest> {
                if (t.id == b) {
                  out.b = std::move(r);
                  out.order.push_back("b");
                  return std::nullopt;
                }
                out.order.push_back("a" + std::to_string(out.a.size()));
                out.a.push_back(std::move(r));
                if (static_cast<int>(out.a.size()) == kTurnsA) return std::nullopt;
                s.append(a, kObservation);
                return GenerationSession::TurnRequest{a, kCapA, stream_a(static_cast<int>(out.a.size()))};
              },
              &out.stats);
  out.tokens_a = s.tokens(a);
  out.tokens_b = s.tokens(b);
  return out;
}

void expect_same_result(const GenerationResult& x, const GenerationResult& y, const std::string& what) {
  EXPECT_EQ(x.tokens, y.tokens) << what;
  EXPECT_EQ(x.finish_reason, y.finish_reason) << what;
  ASSERT_EQ(x.logprobs.size(), y.logprobs.size()) << what;
  for (size_t i = 0; i < x.logprobs.size(); ++i) EXPECT_NEAR(x.logprobs[i], y.logprobs[i], 1e-5) << what << " " << i;
}

}  // namespace

// max_batch 2: A's three 2-token turns run in rounds 1-2, 3-4 and 5-6 beside B's single 6-token turn
// (rounds 1-6), so the call takes 6 rounds; turns in lockstep (every turn waiting for the slowest of its
// round) would take max(2, 6) + 2 + 2 = 10. Prefills: {A, B} at round 1, A's follow-ups at rounds 3
// and 5 = 3. Decode steps: after rounds 1-5 (after round 6 no row is left) = 5. Turn ends in order:
// A0 (round 2), A1 (round 4), then at round 6 B before A2 (B's row is first in the batch). A1 (history
// 11 tokens) is written into A0's finished slot in place (the batch has 11 columns: B's 9 + 2); A2
// (16 tokens) does not fit B's 13 columns and joins at the end: 1 reused slot.
TEST(RunTurns, NextTurnStartsWhileOthersDecode) {
  policy::Transformer m = fixtures::random_model("qwen3");
  const Played p = play(m, 2);
  EXPECT_EQ(p.stats.rounds, 6);
  EXPECT_EQ(p.stats.prefills, 3);
  EXPECT_EQ(p.stats.decode_steps, 5);
  EXPECT_EQ(p.stats.peak_rows, 2);
  EXPECT_EQ(p.stats.reused_slots, 1);
  EXPECT_EQ(p.order, (std::vector<std::string>{"a0", "a1", "b", "a2"}));
  ASSERT_EQ(p.a.size(), 3u);
  for (const GenerationResult& r : p.a) EXPECT_EQ(r.tokens.size(), static_cast<size_t>(kCapA));
  EXPECT_EQ(p.b.tokens.size(), static_cast<size_t>(kCapB));
  // The histories: prompt, then each turn's tokens, observations between A's turns.
  std::vector<int64_t> want_a = kPromptA;
  for (int k = 0; k < kTurnsA; ++k) {
    want_a.insert(want_a.end(), p.a[k].tokens.begin(), p.a[k].tokens.end());
    if (k + 1 < kTurnsA) want_a.insert(want_a.end(), kObservation.begin(), kObservation.end());
  }
  EXPECT_EQ(p.tokens_a, want_a);
  std::vector<int64_t> want_b = kPromptB;
  want_b.insert(want_b.end(), p.b.tokens.begin(), p.b.tokens.end());
  EXPECT_EQ(p.tokens_b, want_b);
}

// What each turn samples does not depend on the schedule: the same turns one at a time through
// GenerationSession::generate() (turn k of A alone with seed kSeed + k: stream sampling_stream(kSeed + k,
// 0)), the whole schedule with max_batch 1, and with decode steps through policy::DecodeGraph.
// max_batch 1 runs the FIFO queue one row at a time: A0 (rounds 1-2; A1 queued behind B), B (3-8),
// A1 (9-10), A2 (11-12) = 12 rounds, 4 prefills.
TEST(RunTurns, TurnsSampleWhatTheySampleAlone) {
  policy::Transformer m = fixtures::random_model("qwen3");
  const Played batched = play(m, 2);

  GenerationSession alone(m);
  const size_t a = alone.add_sequence(kPromptA);
  SamplingParams pa = sampling();
  pa.max_new_tokens = kCapA;
  for (int k = 0; k < kTurnsA; ++k) {
    if (k > 0) alone.append(a, kObservation);
    // seed kSeed + k at index 0 is stream_a(k); index 1 would be another stream.
    const GenerationResult r = alone.generate({a}, pa, kSeed + k, 1)[0];
    expect_same_result(batched.a[k], r, "A turn " + std::to_string(k));
  }
  SamplingParams pb = sampling();
  pb.max_new_tokens = kCapB;
  // B: stream sampling_stream(kSeed + 100, 1) is what generate() gives its prompt at index 1.
  const GenerationResult b = rollout::generate(m, {kPromptA, kPromptB}, pb, kSeed + 100, 2)[1];
  expect_same_result(batched.b, b, "B");

  const Played serial = play(m, 1);
  EXPECT_EQ(serial.stats.rounds, 12);
  EXPECT_EQ(serial.stats.prefills, 4);
  EXPECT_EQ(serial.stats.peak_rows, 1);
  // Whenever the only row finishes the batch is emptied (nothing to keep), so no slot is reused.
  EXPECT_EQ(serial.stats.reused_slots, 0);
  EXPECT_EQ(serial.order, (std::vector<std::string>{"a0", "b", "a1", "a2"}));
  for (int k = 0; k < kTurnsA; ++k) expect_same_result(batched.a[k], serial.a[k], "serial A " + std::to_string(k));
  expect_same_result(batched.b, serial.b, "serial B");

  // The decode-graph path (fixed-shape steps; on a CPU run eagerly) keeps finished rows for the graph's
  // sake under other rules, and samples the same.
  const Played graph = play(m, 2, SamplingParams::DecodeGraphMode::kOn);
  EXPECT_EQ(graph.stats.rounds, 6);
  EXPECT_LE(graph.stats.peak_rows, 2) << "finished rows kept for the graph never push the batch past max_batch";
  for (int k = 0; k < kTurnsA; ++k) expect_same_result(batched.a[k], graph.a[k], "graph A " + std::to_string(k));
  expect_same_result(batched.b, graph.b, "graph B");
}

// Bad turns are named errors: a turn for a sequence that already has one queued or running, a cap < 1,
// an unknown id. An exception from the callback leaves run_turns() and
// the model's training mode is restored.
TEST(RunTurns, BadTurnsAreNamedErrors) {
  policy::Transformer m = fixtures::random_model("qwen3");
  const auto expect_error = [&](const std::string& what, const GenerationSession::TurnEnd& end,
                                const std::vector<GenerationSession::TurnRequest>& first_of) {
    SCOPED_TRACE(what);
    GenerationSession s(m);
    s.add_sequence(kPromptA);
    s.add_sequence(kPromptB);
    try {
      s.run_turns(first_of, sampling(), 4, end);
      ADD_FAILURE() << "no error";
    } catch (const spade::Error& e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
  };
  const auto none = [](const GenerationSession::TurnRequest&, GenerationResult&&) {
    return std::optional<GenerationSession::TurnRequest>();
  };
  const std::vector<GenerationSession::TurnRequest> both = {{0, 1, 1}, {1, 8, 2}};
  // Sequence 0 ends first (cap 1) and asks for another turn of sequence 1, which is still running.
  expect_error("already has a turn queued or running",
               [](const GenerationSession::TurnRequest&, GenerationResult&&) {
                 return std::optional<GenerationSession::TurnRequest>({1, 1, 3});
               },
               both);
  expect_error("max_new_tokens >= 1", none, {{0, 0, 1}});
  expect_error("unknown or released sequence 7", none, {{7, 1, 1}});
  expect_error("already has a turn queued or running", none, {{0, 1, 1}, {0, 1, 2}});

  m->train();
  GenerationSession s(m);
  s.add_sequence(kPromptA);
  s.add_sequence(kPromptB);
  EXPECT_THROW(s.run_turns({{0, 1, 1}, {1, 8, 2}}, sampling(), 2,
                           [](const GenerationSession::TurnRequest&, GenerationResult&&)
                               -> std::optional<GenerationSession::TurnRequest> { throw spade::Error("env broke"); }),
               spade::Error);
  EXPECT_TRUE(m->is_training()) << "training mode restored after the callback threw";
  // Sequence 0's turn had ended (its K/V parked) when the callback threw: it goes on. Sequence 1's K/V
  // lived in the batch: it is refused until released.
  s.append(0, {1});
  EXPECT_EQ(s.cached_tokens(0), static_cast<int64_t>(kPromptA.size()));
  try {
    s.append(1, {1});
    ADD_FAILURE() << "append to a sequence whose turn was lost";
  } catch (const spade::Error& e) {
    EXPECT_NE(std::string(e.what()).find("release it"), std::string::npos) << e.what();
  }
  s.release(1);
}

// Padding in front of every row is trimmed even when finished slots are refilled in place (no
// compaction while turns wait). Backlog: 16 sequences, 4 slots, 12 turns each of 2-9 tokens (a fixed
// pseudo-random pattern, so rows rarely finish together and slots are refilled in place), an
// observation token between turns. A written row sits right-aligned behind padding, so without
// trimming the columns grow by one per round (267 here, the round count, against a longest row of 87;
// 2423 against 1139 in `spade bench turns` before the trim existed). With it they stay within
// max(4/3 x, 64 +) the longest row, + 2 (a finished row is decoded once more; one step's column).
TEST(RunTurns, BacklogKeepsTheCacheNarrow) {
  policy::Transformer m = fixtures::random_model("qwen3");
  GenerationSession s(m);
  constexpr int kSeqs = 16, kTurns = 12;
  const auto cap = [](size_t i, int k) { return 2 + static_cast<int>((i * 7 + static_cast<size_t>(k) * 5) % 8); };
  std::vector<GenerationSession::TurnRequest> first;
  for (int i = 0; i < kSeqs; ++i)
    first.push_back({s.add_sequence({1 + i, 2, 3, 4, 5, 6}), cap(i, 0), sampling_stream(9, i)});
  std::vector<int> turns(kSeqs, 0);
  SamplerStats st;
  s.run_turns(first, sampling(), 4,
              [&](const GenerationSession::TurnRequest& t,
                  GenerationResult&&) -> std::optional<GenerationSession::TurnRequest> {
                const int k = ++turns[t.id];
                if (k == kTurns) return std::nullopt;
                s.append(t.id, {7});
                return GenerationSession::TurnRequest{t.id, cap(t.id, k), sampling_stream(9 + k, t.id)};
              },
              &st);
  int64_t tokens = 0, longest = 0;
  for (int i = 0; i < kSeqs; ++i) {
    int64_t sampled = 0;
    for (int k = 0; k < kTurns; ++k) sampled += cap(i, k);
    EXPECT_EQ(static_cast<int64_t>(s.tokens(i).size()), 6 + sampled + kTurns - 1);
    longest = std::max<int64_t>(longest, s.tokens(i).size());
    tokens += sampled;
  }
  const int64_t bound = std::max(longest * 4 / 3, longest + 64) + 2;
  EXPECT_GE(st.rounds, tokens / 4);  // four slots, one token each per round
  EXPECT_GT(st.rounds, bound) << "enough rounds for untrimmed padding to show";
  EXPECT_GT(st.reused_slots, 50) << "most follow-ups were written in place";
  EXPECT_LE(st.peak_columns, bound);
}
