// rollout::generate_stream (issue 20, the engine of `spade serve`): requests that arrive while others
// decode, each with its own SamplingParams, must sample exactly what generate() samples for each of them
// alone with the same stream (the expected values come from separate generate() calls, one request at a
// time); StreamSource::on_token can end a request early; and SamplingParams::top_logprobs must be the
// log-softmax of a full forward over the sequence (no KV cache, no sampler), sorted.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <map>

#include "common/error.h"
#include "rollout/sampler.h"
#include "tests/testing/random_model.h"
#include "tests/testing/test_util.h"

using namespace spade;
using rollout::FinishReason;
using rollout::GenerationResult;
using rollout::SamplingParams;
using rollout::StreamRequest;

namespace {

/// Feeds `requests` to the sampler, request i not before take() call arrive[i] (0 = the first call), and
/// collects every result; on_token ends request `abort_id` once it has `abort_after` tokens.
class Scripted : public rollout::StreamSource {
 public:
  Scripted(std::vector<StreamRequest> requests, std::vector<int> arrive) : reqs_(std::move(requests)), arrive_(std::move(arrive)) {}
  std::vector<StreamRequest> take(size_t free) override {
    std::vector<StreamRequest> out;
    for (size_t i = 0; i < reqs_.size() && out.size() < free; ++i)
      if (!taken_[i] && arrive_[i] <= calls_) {
        taken_[i] = true;
        out.push_back(reqs_[i]);
      }
    ++calls_;
    return out;
  }
  bool on_token(uint64_t id, const GenerationResult& so_far) override {
    ++reported[id];
    EXPECT_EQ(so_far.tokens.size(), static_cast<size_t>(reported[id])) << "request " << id;
    return !(id == abort_id && static_cast<int>(so_far.tokens.size()) >= abort_after);
  }
  void on_finish(uint64_t id, GenerationResult&& r) override { results[id] = std::move(r); }

  std::map<uint64_t, GenerationResult> results;
  std::map<uint64_t, int> reported;
  uint64_t abort_id = ~0ull;
  int abort_after = 0;

 private:
  std::vector<StreamRequest> reqs_;
  std::vector<int> arrive_;
  std::map<size_t, bool> taken_;
  int calls_ = 0;
};

void expect_same(const GenerationResult& got, const GenerationResult& want, const std::string& what) {
  EXPECT_EQ(got.tokens, want.tokens) << what;
  ASSERT_EQ(got.logprobs.size(), want.logprobs.size()) << what;
  for (size_t i = 0; i < got.logprobs.size(); ++i) EXPECT_NEAR(got.logprobs[i], want.logprobs[i], 1e-4) << what << " token " << i;
  EXPECT_EQ(got.finish_reason, want.finish_reason) << what;
}

SamplingParams params(double t, int top_k, double top_p, double min_p, int cap, std::vector<int64_t> stop = {}) {
  SamplingParams p;
  p.temperature = t;
  p.top_k = top_k;
  p.top_p = top_p;
  p.min_p = min_p;
  p.max_new_tokens = cap;
  p.stop_token_ids = std::move(stop);
  return p;
}

}  // namespace

// Four requests with four different samplings, two of them arriving after the first ones have decoded a
// few tokens, through a batch of 2 rows (so they also wait in the queue): each equals generate() on its
// own prompt with its own params and seed (stream sampling_stream(seed, 0)), on both draw backends (the
// tensor path groups rows by their params).
TEST(GenerateStream, MixedParamsArrivingLateSampleWhatGenerateSamplesAlone) {
  policy::Transformer m = fixtures::random_model();
  const std::vector<std::vector<int64_t>> prompts = {{5, 9, 2, 7}, {4, 8, 15, 16, 23}, {1, 2, 3}, {30, 31, 7, 7, 8, 9}};
  std::vector<SamplingParams> ps = {params(1.0, 0, 1.0, 0, 9), params(0, 20, 0.95, 0, 7),
                                    params(0.7, 5, 0.9, 0, 8, {3, 17}), params(1.3, 0, 1.0, 0.1, 6)};
  const std::vector<uint64_t> seeds = {11, 12, 13, 14};
  for (auto backend : {SamplingParams::Backend::kHost, SamplingParams::Backend::kTensor}) {
    const std::string b = backend == SamplingParams::Backend::kHost ? "host" : "tensor";
    std::vector<StreamRequest> reqs;
    for (size_t i = 0; i < prompts.size(); ++i) {
      ps[i].backend = backend;
      reqs.push_back({100 + i, prompts[i], &ps[i], rollout::sampling_stream(seeds[i], 0)});
    }
    Scripted src(reqs, {0, 0, 3, 5});
    SamplingParams batch;
    batch.backend = backend;
    rollout::SamplerStats stats;
    rollout::generate_stream(m, batch, /*max_batch=*/2, src, &stats);
    ASSERT_EQ(src.results.size(), prompts.size()) << b;
    EXPECT_EQ(stats.peak_rows, 2) << b;
    for (size_t i = 0; i < prompts.size(); ++i) {
      const GenerationResult want = rollout::generate(m, {prompts[i]}, ps[i], seeds[i], 1)[0];
      expect_same(src.results.at(100 + i), want, b + " request " + std::to_string(i));
      // on_token saw every token but the last (which came with on_finish).
      EXPECT_EQ(src.reported[100 + i], static_cast<int>(want.tokens.size()) - 1) << b << " request " << i;
    }
  }
}

// on_token returning false ends that request at once (kAbort, the tokens so far, which are generate()'s
// first ones); the request beside it runs to its cap undisturbed.
TEST(GenerateStream, OnTokenFalseEndsTheRequestAtOnce) {
  policy::Transformer m = fixtures::random_model();
  const SamplingParams p = params(1.0, 0, 1.0, 0, 12);
  const std::vector<int64_t> a = {5, 9, 2, 7}, b = {4, 8, 15};
  Scripted src({{0, a, &p, rollout::sampling_stream(3, 0)}, {1, b, &p, rollout::sampling_stream(4, 0)}}, {0, 0});
  src.abort_id = 0;
  src.abort_after = 3;
  rollout::generate_stream(m, p, 4, src);
  const GenerationResult full_a = rollout::generate(m, {a}, p, 3, 1)[0];
  const GenerationResult& got = src.results.at(0);
  EXPECT_EQ(got.finish_reason, FinishReason::kAbort);
  EXPECT_STREQ(rollout::finish_reason_name(got.finish_reason), "abort");
  ASSERT_EQ(got.tokens.size(), 3u);
  EXPECT_EQ(got.tokens, std::vector<int64_t>(full_a.tokens.begin(), full_a.tokens.begin() + 3));
  expect_same(src.results.at(1), rollout::generate(m, {b}, p, 4, 1)[0], "request beside the aborted one");
}

// top_logprobs: at every sampled position, the k largest of log_softmax(logits / T) of a full forward over
// prompt + the tokens sampled before it (T = 1 for greedy), in descending order; the sampled token's own
// logprob is its value in that distribution.
TEST(GenerateStream, TopLogprobsAreTheFullForwardLogSoftmax) {
  policy::Transformer m = fixtures::random_model();
  m->eval();
  const std::vector<int64_t> prompt = {5, 9, 2, 7, 11};
  for (double t : {0.0, 0.8}) {
    SamplingParams p = params(t, 0, 1.0, 0, 6);
    p.top_logprobs = 4;
    const GenerationResult r = rollout::generate(m, {prompt}, p, 21, 1)[0];
    ASSERT_EQ(r.top_logprobs.size(), r.tokens.size()) << t;
    std::vector<int64_t> seq = prompt;
    for (size_t i = 0; i < r.tokens.size(); ++i) {
      torch::NoGradGuard ng;
      const int64_t T = seq.size();
      auto h = m->forward(torch::tensor(seq, torch::kLong).view({1, T}), torch::arange(T, torch::kLong).view({1, T}));
      auto logp = torch::log_softmax(m->lm_head(h)[0][T - 1].to(torch::kDouble) / (t == 0 ? 1.0 : t), -1);
      auto [vals, ids] = logp.sort(0, /*descending=*/true);
      ASSERT_EQ(r.top_logprobs[i].size(), 4u);
      for (int k = 0; k < 4; ++k) {
        EXPECT_EQ(r.top_logprobs[i][k].token, ids[k].item<int64_t>()) << "T " << t << " position " << i << " rank " << k;
        EXPECT_NEAR(r.top_logprobs[i][k].logprob, vals[k].item<double>(), 1e-4) << "T " << t << " position " << i;
      }
      EXPECT_NEAR(r.logprobs[i], logp[r.tokens[i]].item<double>(), 1e-4) << "T " << t << " position " << i;
      seq.push_back(r.tokens[i]);
    }
  }
}

// Bad requests are refused naming the request; a negative top_logprobs is refused like other bad params.
TEST(GenerateStream, BadRequestsAreRefused) {
  policy::Transformer m = fixtures::random_model();
  SamplingParams p = params(1.0, 0, 1.0, 0, 4);
  {
    Scripted src({{7, {1, 2}, nullptr, 0}}, {0});
    EXPECT_NE(fixtures::error_of([&] { rollout::generate_stream(m, p, 2, src); }).find("request 7 has no params"), std::string::npos);
  }
  {
    Scripted src({{8, {}, &p, 0}}, {0});
    EXPECT_NE(fixtures::error_of([&] { rollout::generate_stream(m, p, 2, src); }).find("request 8 has an empty prompt"),
              std::string::npos);
  }
  SamplingParams bad = p;
  bad.top_logprobs = -1;
  EXPECT_NE(fixtures::error_of([&] { rollout::generate(m, {{1, 2}}, bad, 0); }).find("top_logprobs"), std::string::npos);
}
