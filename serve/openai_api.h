// OpenAiApi: the OpenAI-compatible endpoints over one Engine (`spade serve`, issue 20), without the HTTP:
// a request body in, a response body or a stream of server-sent events out.
//
//   models()            GET /v1/models: the one served model.
//   chat_completions()  POST /v1/chat/completions: the messages rendered by the checkpoint's chat
//                       template (serve/chat_prompt.h), sampled until the template's end of turn, an
//                       eos id of the checkpoint (policy::stop_token_ids), a stop string or max tokens.
//   completions()       POST /v1/completions: the prompt text encoded as is (or token ids), sampled until
//                       an eos id of the checkpoint, a stop string or max tokens.
// A reply's text follows serve/choice_text.h; "logprobs" are the sampler's (rollout/sampler.h: under the
// temperature-scaled distribution the token was drawn from; at temperature 0, the model's own), with
// top_logprobs alternatives under the same distribution. Omitted max_tokens: chat takes what is left of
// the context (max_position_embeddings - prompt tokens), completions OpenAI's 16. An omitted seed is
// drawn at random; choice c then samples rollout::sampling_stream(seed, c) (serve/engine.h).
// Errors: ApiError (400 bad request, 404 unknown model, 429 queue full, 503 shutting down, 500 engine
// failure); nothing a request does stops the engine.
// Thread-safety: all methods are thread-safe (one call per HTTP request, concurrently); an EventStream
// is used by one thread.
#pragma once

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "policy/chat_template.h"
#include "policy/tokenizer.h"
#include "serve/api_request.h"
#include "serve/engine.h"

namespace spade::serve {

/// The served model, as the API describes and checks it.
struct ServedModel {
  std::string name;                     // the "model" id requests must name
  int64_t context_length = 0;           // max_position_embeddings: prompt + max tokens must fit
  int64_t vocab_size = 0;               // token-id prompts must be below it
  std::vector<int64_t> chat_stop_ids;   // policy::stop_token_ids(config, &chat)
  std::string no_chat;                  // why the checkpoint has no chat template ("" when it has one)
  std::vector<int64_t> text_stop_ids;   // policy::stop_token_ids(config, nullptr)
  int64_t created = 0;                  // unix time the server loaded it
};

/// The text of `ids`; ids the tokenizer cannot decode (a model whose vocabulary is larger than its
/// tokenizer's) are left out rather than failing the request.
std::string decode_lenient(const policy::Tokenizer& tok, const std::vector<int64_t>& ids);

class EventStream;

class OpenAiApi {
 public:
  /// Keeps references to `engine`, `tokenizer` and `chat` (they must outlive it). `chat` may be null (a
  /// checkpoint without a chat template: chat completions then answer 400 with model.no_chat).
  OpenAiApi(Engine& engine, const policy::Tokenizer& tokenizer, const policy::ChatTemplate* chat, ServedModel model);

  /// GET /v1/models: {"object": "list", "data": [model(name)]}.
  nlohmann::ordered_json models() const;
  /// GET /v1/models/{id}: {"id", "object": "model", "created", "owned_by": "spade", "max_model_len"};
  /// throws ApiError(404) for another id.
  nlohmann::ordered_json model(const std::string& id) const;

  /// A reply: a whole JSON body, or (with "stream": true) a stream of events.
  struct Answer {
    std::string body;
    std::unique_ptr<EventStream> stream;
  };
  /// POST /v1/chat/completions. Blocks until the reply is complete unless it streams. Throws ApiError.
  Answer chat_completions(const std::string& body);
  /// POST /v1/completions. As chat_completions.
  Answer completions(const std::string& body);

  const ServedModel& served() const { return model_; }

 private:
  struct Prepared;
  Answer run(Prepared p);

  Engine& engine_;
  const policy::Tokenizer& tok_;
  const policy::ChatTemplate* chat_;
  const ServedModel model_;
};

/// The server-sent events of one streamed reply: next() returns the text to send as it becomes available.
/// Destroying it before the end cancels the request (its rows leave the batch).
class EventStream {
 public:
  struct State;
  explicit EventStream(std::unique_ptr<State> state);
  ~EventStream();
  /// Waits up to `wait` for output and returns the events ready to send ("" if none yet). After the
  /// event carrying "data: [DONE]" has been returned, ended() is true and next() returns "".
  std::string next(std::chrono::milliseconds wait);
  bool ended() const;
  /// The client went away: ends the request now.
  void cancel();

 private:
  std::unique_ptr<State> s_;
};

}  // namespace spade::serve
