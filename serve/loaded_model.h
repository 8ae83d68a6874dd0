// A checkpoint ready to sample from: the model on its device in eval mode, its tokenizer, its chat
// template (when the tokenizer has the format's tokens) and one Engine (serve/engine.h) batching every
// request. What `spade serve` serves (serve/server.h) and what a `checkpoint:DIR` duel participant plays
// in process (serve/local_chat.h, apps/checkpoint_agent.h).
// Thread-safety: the accessors are const and thread-safe; the Engine is thread-safe.
#pragma once
#include <memory>
#include <string>

#include "policy/chat_template.h"
#include "policy/tokenizer.h"
#include "serve/engine.h"
#include "serve/openai_api.h"

namespace spade::serve {

class LoadedModel {
 public:
  /// Loads `checkpoint` (HF layout: config.json, safetensors, tokenizer.json or .model) in `dtype`
  /// ("float32" | "bfloat16") onto `device` ("cpu", "cuda", "cuda:1") and starts its engine. `model_name`
  /// is the served id ("" = the checkpoint path as given, as vLLM). A checkpoint whose tokenizer lacks
  /// its chat format's tokens loads without a chat template (served().no_chat says why). Throws
  /// spade::Error naming what failed (the checkpoint, the dtype, the device).
  LoadedModel(const std::string& checkpoint, const std::string& model_name, const std::string& device,
              const std::string& dtype, const Engine::Options& engine);
  ~LoadedModel();  // stops the engine (every queued and running job finishes first)
  LoadedModel(const LoadedModel&) = delete;
  LoadedModel& operator=(const LoadedModel&) = delete;

  Engine& engine() const { return *engine_; }
  const policy::Tokenizer& tokenizer() const { return tok_; }
  const policy::ChatTemplate* chat() const { return chat_.get(); }  // null without a chat template
  const ServedModel& served() const { return served_; }

 private:
  policy::Tokenizer tok_;
  std::unique_ptr<policy::ChatTemplate> chat_;
  std::unique_ptr<Engine> engine_;
  ServedModel served_;
};

}  // namespace spade::serve
