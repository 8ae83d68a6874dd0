#include "serve/engine.h"

#include <unordered_map>

namespace spade::serve {

// ---- Job ---------------------------------------------------------------------------------------------

Job::Job(JobSpec spec) : spec_(std::move(spec)), out_(choices()) {}

namespace {
/// Appends to `o` what `r` (a GenerationResult or a ChoiceOutput) has beyond it.
template <class Output>
void append_new(ChoiceOutput& o, const Output& r) {
  for (size_t i = o.tokens.size(); i < r.tokens.size(); ++i) {
    o.tokens.push_back(r.tokens[i]);
    o.logprobs.push_back(r.logprobs[i]);
    if (i < r.top_logprobs.size()) o.top_logprobs.push_back(r.top_logprobs[i]);
  }
}
}  // namespace

void Job::publish(size_t c, const rollout::GenerationResult& so_far) {
  std::lock_guard<std::mutex> lk(mu_);
  append_new(out_[c], so_far);
  if (token_waiters_ > 0) cv_.notify_all();
}

void Job::finish(size_t c, const rollout::GenerationResult& result) {
  std::lock_guard<std::mutex> lk(mu_);
  ChoiceOutput& o = out_[c];
  append_new(o, result);
  o.done = true;
  o.finish_reason = result.finish_reason;
  o.stop_string = result.stop_string;
  ++done_;
  cv_.notify_all();
}

void Job::fail(const std::string& message) {
  std::lock_guard<std::mutex> lk(mu_);
  if (error_.empty()) error_ = message;
  cv_.notify_all();
}

bool Job::ended_locked() const { return !error_.empty() || done_ == out_.size(); }

bool Job::wait_end(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lk(mu_);
  return cv_.wait_for(lk, timeout, [&] { return ended_locked(); });
}

std::string Job::error() const {
  std::lock_guard<std::mutex> lk(mu_);
  return error_;
}

bool Job::read(std::vector<ChoiceOutput>& out, std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lk(mu_);
  out.resize(out_.size());
  auto news = [&] {
    if (ended_locked()) return true;
    for (size_t c = 0; c < out_.size(); ++c)
      if (out_[c].tokens.size() > out[c].tokens.size() || out_[c].done != out[c].done) return true;
    return false;
  };
  ++token_waiters_;
  cv_.wait_for(lk, timeout, news);
  --token_waiters_;
  for (size_t c = 0; c < out_.size(); ++c) {
    append_new(out[c], out_[c]);
    out[c].done = out_[c].done;
    out[c].finish_reason = out_[c].finish_reason;
    out[c].stop_string = out_[c].stop_string;
  }
  return ended_locked();
}

// ---- Engine: the sampler's side ----------------------------------------------------------------------

/// The StreamSource of the engine thread: hands queued choices to the sampler and its output to the jobs.
class Engine::Source : public rollout::StreamSource {
 public:
  explicit Source(Engine& e) : e_(e) {}

  std::vector<rollout::StreamRequest> take(size_t free) override {
    std::vector<rollout::StreamRequest> out;
    std::lock_guard<std::mutex> lk(e_.mu_);
    while (out.size() < free && !e_.pending_.empty()) {
      Pending& p = e_.pending_.front();
      Job& job = *p.job;
      if (!job.error().empty()) {  // failed while some of its choices ran: the rest never start
        e_.failed_ += job.choices() - p.next_choice;
        e_.pending_.pop_front();
        continue;
      }
      if (job.cancelled()) {  // its other choices never start
        for (size_t c = p.next_choice; c < job.choices(); ++c) {
          rollout::GenerationResult none;
          none.finish_reason = rollout::FinishReason::kAbort;
          ++e_.aborted_;
          job.finish(c, none);
        }
        e_.pending_.pop_front();
        continue;
      }
      const size_t c = p.next_choice++;
      const uint64_t id = next_id_++;
      rows_[id] = {p.job, c};
      const JobSpec& spec = job.spec();
      out.push_back({id, spec.prompts[c / spec.n], &spec.params, rollout::sampling_stream(spec.seed, c)});
      if (p.next_choice == job.choices()) e_.pending_.pop_front();
    }
    e_.running_ += out.size();
    return out;
  }

  bool on_token(uint64_t id, const rollout::GenerationResult& so_far) override {
    const Row& row = rows_.at(id);
    if (row.job->cancelled()) return false;
    row.job->publish(row.choice, so_far);
    return true;
  }

  void on_finish(uint64_t id, rollout::GenerationResult&& result) override {
    const auto it = rows_.find(id);
    e_.tokens_ += result.tokens.size();  // counted before the job's reader wakes
    if (result.finish_reason == rollout::FinishReason::kAbort) ++e_.aborted_;
    else ++e_.finished_;
    --e_.running_;
    it->second.job->finish(it->second.choice, result);
    rows_.erase(it);
  }

  /// The sampler threw: every choice it was running is lost; their jobs fail with `message`.
  void fail_running(const std::string& message) {
    for (auto& [id, row] : rows_) {
      ++e_.failed_;
      --e_.running_;
      row.job->fail(message);
    }
    rows_.clear();
  }

 private:
  struct Row {
    std::shared_ptr<Job> job;
    size_t choice;
  };
  Engine& e_;
  std::unordered_map<uint64_t, Row> rows_;  // the choices taken by the sampler and not finished
  uint64_t next_id_ = 0;
};

// ---- Engine ------------------------------------------------------------------------------------------

Engine::Engine(policy::Transformer model, std::function<std::string(const std::vector<int64_t>&)> detokenize,
               Options options)
    : model_(std::move(model)), detokenize_(std::move(detokenize)), options_(std::move(options)) {
  if (options_.max_batch < 1) throw spade::Error("serve engine: max_batch must be >= 1, not " + std::to_string(options_.max_batch));
  if (options_.max_queue < 1) throw spade::Error("serve engine: max_queue must be >= 1");
  source_ = std::make_unique<Source>(*this);
  thread_ = std::thread([this] { loop(); });
}

Engine::~Engine() { stop(); }

std::shared_ptr<Job> Engine::submit(JobSpec spec) {
  if (spec.prompts.empty()) throw spade::Error("serve engine: a job needs at least one prompt");
  for (size_t i = 0; i < spec.prompts.size(); ++i)
    if (spec.prompts[i].empty()) throw spade::Error("serve engine: prompt " + std::to_string(i) + " is empty");
  if (spec.n < 1) throw spade::Error("serve engine: n must be >= 1");
  if (!spec.params.stop_strings.empty()) spec.params.detokenize = detokenize_;
  auto job = std::make_shared<Job>(std::move(spec));
  {
    std::lock_guard<std::mutex> lk(mu_);
    if (stopping_) throw EngineStopping("the server is shutting down");
    if (pending_.size() >= options_.max_queue)
      throw QueueFull("the request queue is full (" + std::to_string(options_.max_queue) +
                      " requests waiting for a slot); retry later");
    pending_.push_back({job, 0});
  }
  cv_.notify_one();
  return job;
}

Engine::Stats Engine::stats() const {
  Stats s;
  {
    std::lock_guard<std::mutex> lk(mu_);
    s.waiting = pending_.size();
  }
  s.running = running_;
  s.finished = finished_;
  s.aborted = aborted_;
  s.failed = failed_;
  s.completion_tokens = tokens_;
  return s;
}

void Engine::stop() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Engine::loop() {
  for (;;) {
    {
      std::unique_lock<std::mutex> lk(mu_);
      cv_.wait(lk, [&] { return !pending_.empty() || stopping_; });
      if (pending_.empty()) return;  // stopping, and nothing queued or running
    }
    try {
      rollout::generate_stream(model_, options_.batch, options_.max_batch, *source_);
    } catch (const std::exception& e) {  // e.g. out of memory: the running choices fail, the engine goes on
      std::string what = e.what();
      what = what.substr(0, what.find('\n'));  // LibTorch's message without its backtrace
      source_->fail_running("the engine failed while sampling: " + what);
    }
  }
}

}  // namespace spade::serve
