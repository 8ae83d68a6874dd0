// Chat completions from a loaded checkpoint in this process (no HTTP): the engine behind `checkpoint:DIR`
// duel participants (DESIGN.md: evaldual reaches a checkpoint only through serve's engine interface).
// The messages are rendered by the checkpoint's chat template (token-in/token-out, as `spade serve`'s
// /v1/chat/completions renders them: serve/chat_prompt.h), sampled by the shared Engine (so concurrent
// sessions share its running batch), and the reply decoded up to the first chat stop token.
//
// A conversation longer than the checkpoint's context: the prompt keeps its first `keep_head_tokens`
// ids (the system turn's start: the task) and its newest ids, dropping the middle, so that prompt +
// max_new_tokens fits max_position_embeddings; the reply says how many ids were dropped. (An agent
// harness's history grows every step; a small checkpoint would otherwise fail every late step.)
//
// Thread-safety: complete() may be called concurrently (the Engine batches the calls).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "policy/chat_formats.h"
#include "rollout/sampler.h"
#include "serve/loaded_model.h"

namespace spade::serve {

struct LocalChatReply {
  std::string content;
  int64_t prompt_tokens = 0;      // ids fed to the model (after any cut)
  int64_t completion_tokens = 0;  // ids sampled
  int64_t dropped_tokens = 0;     // prompt ids cut from the middle to fit the context (see above)
};

class LocalChat {
 public:
  /// `model` must have a chat template (throws spade::Error with served().no_chat otherwise).
  explicit LocalChat(std::shared_ptr<LoadedModel> model, int64_t keep_head_tokens = 512);

  /// One completion of `messages` with `params` (params.stop_token_ids is replaced by the chat's stop
  /// ids) and `seed` (the engine's per-choice stream: the same call samples the same reply). Throws
  /// spade::Error when the engine fails, or when max_new_tokens leaves no room for a prompt.
  LocalChatReply complete(const std::vector<policy::ChatMessage>& messages, rollout::SamplingParams params,
                          uint64_t seed) const;

  const LoadedModel& model() const { return *model_; }

 private:
  std::shared_ptr<LoadedModel> model_;
  int64_t keep_head_;
};

}  // namespace spade::serve
