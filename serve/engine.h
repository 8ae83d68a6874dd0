// Engine: one model and one sampling thread serving many concurrent requests (`spade serve`, issue 20).
// Requests ("jobs": prompts x n choices) from any thread queue here; the engine thread runs
// rollout::generate_stream, so each choice joins the running batch as soon as a row is free and leaves
// it when it ends, while the others go on decoding (continuous batching, not a lock around
// generate()). Every sampled token is published to its job as it is drawn; a cancelled job's choices
// leave the batch at their next token (their rows are freed) or are never started.
//
// Determinism: choice c of a job (c = prompt index x n + i) samples from the stream
// rollout::sampling_stream(seed, c), so it samples what rollout::generate(prompts repeated n times,
// params, seed) samples for that entry, whatever else shares the batch (rollout/sampler.h).
// Thread-safety: submit(), stats() and stop() are thread-safe; a Job is thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/error.h"
#include "rollout/sampler.h"

namespace spade::serve {

/// What a job asks for.
struct JobSpec {
  std::vector<std::vector<int64_t>> prompts;  // each non-empty, ids in [0, vocab)
  int n = 1;                                  // choices per prompt
  rollout::SamplingParams params;             // per-choice sampling; max_new_tokens is each choice's cap
  uint64_t seed = 0;
};

/// One choice's output so far.
struct ChoiceOutput {
  std::vector<int64_t> tokens;
  std::vector<float> logprobs;
  std::vector<std::vector<rollout::TokenLogprob>> top_logprobs;  // with params.top_logprobs > 0
  bool done = false;
  rollout::FinishReason finish_reason = rollout::FinishReason::kLength;
  std::string stop_string;
};

/// A submitted job. Written by the engine thread, read by the submitter.
class Job {
 public:
  explicit Job(JobSpec spec);
  const JobSpec& spec() const { return spec_; }
  size_t choices() const { return spec_.prompts.size() * static_cast<size_t>(spec_.n); }

  /// Waits up to `timeout` for output beyond `out` (per choice: the tokens already copied into out[c]),
  /// then appends what is new to `out` (resized to choices()) and copies the done flags. Returns true
  /// when the job has ended (every choice done, or failed: error() is then set).
  bool read(std::vector<ChoiceOutput>& out, std::chrono::milliseconds timeout);
  /// Waits up to `timeout` for the job to end (tokens alone do not wake it); returns whether it has.
  bool wait_end(std::chrono::milliseconds timeout);
  /// "" unless the engine failed while running the job (e.g. out of memory); its choices then end.
  std::string error() const;
  /// Ends the job early: its running choices leave the batch at their next token (kAbort), queued ones
  /// never start. Idempotent.
  void cancel() { cancelled_ = true; }
  bool cancelled() const { return cancelled_; }

  // Engine side.
  void publish(size_t c, const rollout::GenerationResult& so_far);
  void finish(size_t c, const rollout::GenerationResult& result);
  void fail(const std::string& message);

 private:
  bool ended_locked() const;  // every choice done, or failed (mu_ held)
  const JobSpec spec_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<ChoiceOutput> out_;
  size_t done_ = 0;
  int token_waiters_ = 0;  // threads in read(): only they are woken for every token
  std::string error_;
  std::atomic<bool> cancelled_{false};
};

/// Thrown by Engine::submit when the queue is full (HTTP 429) or the engine is stopping (HTTP 503).
class QueueFull : public spade::Error {
 public:
  using spade::Error::Error;
};
class EngineStopping : public spade::Error {
 public:
  using spade::Error::Error;
};

class Engine {
 public:
  struct Options {
    int max_batch = 16;        // rows decoding together
    size_t max_queue = 64;     // jobs waiting for a row; one more is refused (QueueFull)
    /// Batch-wide sampler settings (rollout::SamplingParams: max_prefill_tokens, max_tokens_in_flight,
    /// backend, decode_graph); the per-request fields come with each job.
    rollout::SamplingParams batch;
  };
  /// Starts the engine thread over `model` (shared handle; the engine only reads its parameters, in eval
  /// mode). `detokenize` is installed as SamplingParams::detokenize for jobs with stop strings; it runs
  /// on the engine thread. Throws spade::Error for max_batch < 1 or max_queue < 1.
  Engine(policy::Transformer model, std::function<std::string(const std::vector<int64_t>&)> detokenize, Options options);
  ~Engine();  // stop()
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  /// Queues a job; returns its handle. Throws QueueFull when options.max_queue jobs are waiting,
  /// EngineStopping once stop() has begun, spade::Error for a job with no prompts, an empty prompt or n < 1.
  std::shared_ptr<Job> submit(JobSpec spec);

  struct Stats {
    size_t waiting = 0;             // jobs with choices not started
    size_t running = 0;             // choices in the batch
    uint64_t finished = 0;          // choices ended by stop or length
    uint64_t aborted = 0;           // choices ended early by cancel()
    uint64_t failed = 0;            // choices lost to an engine error
    uint64_t completion_tokens = 0; // tokens sampled, all choices
  };
  Stats stats() const;

  /// Refuses new jobs, lets every queued and running job finish, then stops the thread. Idempotent.
  void stop();

 private:
  class Source;
  void loop();

  policy::Transformer model_;
  std::function<std::string(const std::vector<int64_t>&)> detokenize_;
  const Options options_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  struct Pending {
    std::shared_ptr<Job> job;
    size_t next_choice = 0;  // the next of its choices to start
  };
  std::deque<Pending> pending_;  // jobs with choices not started, in arrival order
  bool stopping_ = false;
  std::atomic<size_t> running_{0};
  std::atomic<uint64_t> finished_{0}, aborted_{0}, failed_{0}, tokens_{0};
  std::unique_ptr<Source> source_;
  std::thread thread_;
};

}  // namespace spade::serve
