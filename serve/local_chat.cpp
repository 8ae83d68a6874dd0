#include "serve/local_chat.h"

#include <algorithm>
#include <chrono>

#include "common/error.h"

namespace spade::serve {

LocalChat::LocalChat(std::shared_ptr<LoadedModel> model, int64_t keep_head_tokens)
    : model_(std::move(model)), keep_head_(std::max<int64_t>(0, keep_head_tokens)) {
  if (!model_) throw spade::Error("LocalChat: no model");
  if (!model_->chat())
    throw spade::Error("checkpoint '" + model_->served().name + "' has no chat template: " + model_->served().no_chat);
}

LocalChatReply LocalChat::complete(const std::vector<policy::ChatMessage>& messages, rollout::SamplingParams params,
                                   uint64_t seed) const {
  const ServedModel& m = model_->served();
  std::vector<int64_t> prompt = model_->chat()->render(messages, /*add_generation_prompt=*/true);
  const int64_t room = m.context_length - params.max_new_tokens;
  if (room < 1)
    throw spade::Error("checkpoint '" + m.name + "': max_new_tokens " + std::to_string(params.max_new_tokens) +
                       " leaves no room for a prompt in its context of " + std::to_string(m.context_length));
  LocalChatReply out;
  if (static_cast<int64_t>(prompt.size()) > room) {
    const int64_t head = std::min(keep_head_, room / 2);
    const int64_t tail = room - head;
    out.dropped_tokens = static_cast<int64_t>(prompt.size()) - room;
    std::vector<int64_t> cut(prompt.begin(), prompt.begin() + head);
    cut.insert(cut.end(), prompt.end() - tail, prompt.end());
    prompt = std::move(cut);
  }
  params.stop_token_ids = m.chat_stop_ids;
  JobSpec spec;
  spec.prompts = {prompt};
  spec.params = params;
  spec.seed = seed;
  std::shared_ptr<Job> job = model_->engine().submit(std::move(spec));
  while (!job->wait_end(std::chrono::milliseconds(1000))) {
  }
  if (!job->error().empty()) throw spade::Error("checkpoint '" + m.name + "': " + job->error());
  std::vector<ChoiceOutput> o;
  job->read(o, std::chrono::milliseconds(0));
  std::vector<int64_t> ids = o.at(0).tokens;
  out.completion_tokens = static_cast<int64_t>(ids.size());
  while (!ids.empty() && std::find(m.chat_stop_ids.begin(), m.chat_stop_ids.end(), ids.back()) != m.chat_stop_ids.end())
    ids.pop_back();
  out.content = decode_lenient(model_->tokenizer(), ids);
  out.prompt_tokens = static_cast<int64_t>(prompt.size());
  return out;
}

}  // namespace spade::serve
