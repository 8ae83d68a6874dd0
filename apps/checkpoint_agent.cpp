#include "apps/checkpoint_agent.h"

#include <filesystem>

#include "common/error.h"
#include "common/fnv1a.h"
#include "serve/local_chat.h"

namespace spade::apps {

namespace {

class CheckpointPolicy : public evaldual::Policy {
 public:
  CheckpointPolicy(std::shared_ptr<serve::LocalChat> chat, const CheckpointAgentOptions& o, uint64_t seed,
                   std::shared_ptr<CheckpointAgent::Counters> counters)
      : chat_(std::move(chat)), options_(o), seed_(seed), counters_(std::move(counters)) {}

  evaldual::PolicyReply query(const std::vector<evaldual::Message>& messages) override {
    std::vector<policy::ChatMessage> chat;
    for (const evaldual::Message& m : messages) chat.push_back({m.role, m.content});
    rollout::SamplingParams p;
    p.temperature = options_.temperature;
    p.top_p = options_.top_p;
    p.top_k = options_.top_k;
    p.max_new_tokens = options_.max_new_tokens;
    const serve::LocalChatReply r = chat_->complete(chat, p, seed_ + queries_++);
    counters_->calls += 1;
    counters_->prompt_tokens += r.prompt_tokens;
    counters_->completion_tokens += r.completion_tokens;
    counters_->dropped_tokens += r.dropped_tokens;
    evaldual::PolicyReply out;
    out.content = r.content;
    out.prompt_tokens = r.prompt_tokens;
    out.completion_tokens = r.completion_tokens;
    return out;
  }

 private:
  std::shared_ptr<serve::LocalChat> chat_;
  CheckpointAgentOptions options_;
  uint64_t seed_;
  uint64_t queries_ = 0;
  std::shared_ptr<CheckpointAgent::Counters> counters_;
};

}  // namespace

CheckpointAgent::CheckpointAgent(const std::string& dir, const CheckpointAgentOptions& options)
    : dir_(dir), options_(options), counters_(std::make_shared<Counters>()) {
  if (!std::filesystem::exists(dir + "/config.json"))
    throw Error("participant checkpoint:" + dir + ": " + dir + "/config.json does not exist (an HF checkpoint directory)");
}

std::shared_ptr<serve::LocalChat> CheckpointAgent::loaded() {
  std::lock_guard<std::mutex> lock(mu_);
  if (chat_) return chat_;
  serve::Engine::Options eo;
  eo.max_batch = options_.max_batch;
  try {
    chat_ = std::make_shared<serve::LocalChat>(
        std::make_shared<serve::LoadedModel>(dir_, "checkpoint:" + dir_, options_.device, options_.dtype, eo));
  } catch (const Error& e) {
    throw Error("participant checkpoint:" + dir_ + ": " + e.what());
  }
  return chat_;
}

CheckpointAgent::~CheckpointAgent() = default;

std::unique_ptr<evaldual::Policy> CheckpointAgent::open_session(const evaldual::SessionContext& ctx) {
  const uint64_t seed = fnv1a64(evaldual::session_key(ctx) + "#" + ctx.participant) + options_.seed;
  return std::make_unique<CheckpointPolicy>(loaded(), options_, seed, counters_);
}

CheckpointUsage CheckpointAgent::totals() const {
  return {counters_->calls.load(), counters_->prompt_tokens.load(), counters_->completion_tokens.load(),
          counters_->dropped_tokens.load()};
}

std::string checkpoint_dir_of(const std::string& participant) {
  const std::string prefix = "checkpoint:";
  return participant.rfind(prefix, 0) == 0 ? participant.substr(prefix.size()) : "";
}

}  // namespace spade::apps
