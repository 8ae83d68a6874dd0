// serve/engine.h: jobs submitted from several threads at once, each with its own sampling, share one
// running batch and still sample what rollout::generate() samples for each of them alone (computed here
// one job at a time, without the engine); a cancelled job leaves the batch; the queue limit refuses the
// job past it; stop() finishes what is queued and refuses what comes after.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <thread>

#include "serve/engine.h"
#include "tests/testing/random_model.h"

using namespace spade;
using namespace spade::serve;
using namespace std::chrono_literals;

namespace {

std::vector<ChoiceOutput> wait_all(Job& job) {
  std::vector<ChoiceOutput> out;
  while (!job.read(out, 1000ms)) {
  }
  return out;
}

rollout::SamplingParams sampling(double t, int top_k, int cap) {
  rollout::SamplingParams p;
  p.temperature = t;
  p.top_k = top_k;
  p.top_p = 1.0;
  p.max_new_tokens = cap;
  return p;
}

Engine::Options options(int max_batch, size_t max_queue) {
  Engine::Options o;
  o.max_batch = max_batch;
  o.max_queue = max_queue;
  return o;
}

bool wait_until(const std::function<bool()>& f) {
  for (int i = 0; i < 2000 && !f(); ++i) std::this_thread::sleep_for(5ms);
  return f();
}

}  // namespace

// Three jobs from three threads (one with 2 prompts x n = 2 choices), a batch of 3 rows: choice c of a job
// (c = prompt x n + i) equals generate(prompts each repeated n times, params, seed)[c].
TEST(Engine, ConcurrentJobsSampleWhatGenerateSamplesForEach) {
  policy::Transformer m = fixtures::random_model();
  Engine engine(m, nullptr, options(3, 8));
  std::vector<JobSpec> specs(3);
  specs[0].prompts = {{5, 9, 2, 7}};
  specs[0].params = sampling(1.0, 0, 10);
  specs[0].seed = 1;
  specs[1].prompts = {{4, 8, 15}, {16, 23, 1, 2, 3}};
  specs[1].n = 2;
  specs[1].params = sampling(0.7, 5, 6);
  specs[1].seed = 2;
  specs[2].prompts = {{30, 31}};
  specs[2].params = sampling(0, 0, 8);
  specs[2].seed = 3;
  std::vector<std::vector<ChoiceOutput>> got(3);
  std::vector<std::thread> threads;
  for (int j = 0; j < 3; ++j)
    threads.emplace_back([&, j] { got[j] = wait_all(*engine.submit(specs[j])); });
  for (std::thread& t : threads) t.join();
  for (int j = 0; j < 3; ++j) {
    std::vector<std::vector<int64_t>> repeated;
    for (const auto& p : specs[j].prompts)
      for (int i = 0; i < specs[j].n; ++i) repeated.push_back(p);
    const auto want = rollout::generate(m, repeated, specs[j].params, specs[j].seed, 1);
    ASSERT_EQ(got[j].size(), want.size()) << "job " << j;
    for (size_t c = 0; c < want.size(); ++c) {
      EXPECT_TRUE(got[j][c].done);
      EXPECT_EQ(got[j][c].tokens, want[c].tokens) << "job " << j << " choice " << c;
      ASSERT_EQ(got[j][c].logprobs.size(), want[c].logprobs.size());
      for (size_t i = 0; i < want[c].logprobs.size(); ++i) EXPECT_NEAR(got[j][c].logprobs[i], want[c].logprobs[i], 1e-4);
      EXPECT_EQ(got[j][c].finish_reason, want[c].finish_reason);
    }
  }
  const Engine::Stats s = engine.stats();
  EXPECT_EQ(s.finished, 6u);
  EXPECT_EQ(s.completion_tokens, 10u + 4 * 6 + 8);
}

// A job that would run 4000 tokens is cancelled after its first tokens: it ends with kAbort long before
// its cap, and the engine serves the next job in the freed row (a batch of 1).
TEST(Engine, CancelFreesTheRow) {
  policy::Transformer m = fixtures::random_model();
  Engine engine(m, nullptr, options(1, 8));
  JobSpec long_job;
  long_job.prompts = {{1, 2, 3}};
  long_job.params = sampling(1.0, 0, 4000);
  auto job = engine.submit(long_job);
  std::vector<ChoiceOutput> out;
  while (out.empty() || out[0].tokens.size() < 2) job->read(out, 1000ms);
  job->cancel();
  while (!job->read(out, 1000ms)) {
  }
  EXPECT_EQ(out[0].finish_reason, rollout::FinishReason::kAbort);
  EXPECT_LT(out[0].tokens.size(), 4000u);
  JobSpec next;
  next.prompts = {{4, 5}};
  next.params = sampling(0, 0, 3);
  EXPECT_EQ(wait_all(*engine.submit(next))[0].tokens.size(), 3u);
  EXPECT_EQ(engine.stats().aborted, 1u);
  EXPECT_EQ(engine.stats().running, 0u);
}

// max_batch 1, max_queue 1: one job runs, one waits, the third is refused; after stop() nothing is taken.
TEST(Engine, QueueLimitAndStop) {
  policy::Transformer m = fixtures::random_model();
  Engine engine(m, nullptr, options(1, 1));
  JobSpec a;
  a.prompts = {{1, 2, 3}};
  a.params = sampling(1.0, 0, 4000);
  auto running = engine.submit(a);
  ASSERT_TRUE(wait_until([&] { return engine.stats().running == 1; }));
  JobSpec b = a;
  b.params.max_new_tokens = 2;
  auto waiting = engine.submit(b);
  EXPECT_THROW(engine.submit(b), QueueFull);
  EXPECT_EQ(engine.stats().waiting, 1u);
  running->cancel();
  EXPECT_EQ(wait_all(*waiting)[0].tokens.size(), 2u);
  engine.stop();
  EXPECT_THROW(engine.submit(b), EngineStopping);
}
