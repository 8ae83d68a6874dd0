// Server: what `spade serve` runs, assembled from a checkpoint directory (issue 20): the model and its
// tokenizer and chat template, one Engine, the OpenAiApi over it and the HttpServer in front, bound at
// construction. Used by apps/cmd_serve.cpp and `spade bench serve`.
// Thread-safety: serve() from one thread; drain() from any thread; engine() is thread-safe.
#pragma once

#include <memory>
#include <string>

#include "serve/engine.h"
#include "serve/loaded_model.h"
#include "serve/http_server.h"
#include "serve/openai_api.h"

namespace spade::serve {

struct ServerOptions {
  std::string checkpoint;          // HF-layout directory: config.json, safetensors, tokenizer.json or .model
  std::string model_name;          // the served model id; "" = the checkpoint path as given (as vLLM)
  std::string device = "cpu";      // torch device of the model ("cpu", "cuda", "cuda:1")
  std::string dtype = "float32";   // float32 | bfloat16
  Engine::Options engine;          // max_batch, max_queue, batch-wide sampler settings
  HttpOptions http;                // host, port, api key, request size limit, threads (0: max_batch +
                                   // max_queue + 16, so that a full queue is answered 429, not left waiting)
};

class Server {
 public:
  /// Loads the checkpoint (a checkpoint whose tokenizer has no chat template still serves completions),
  /// starts the engine and binds the address. Throws spade::Error naming what failed (the checkpoint,
  /// the dtype, the address).
  explicit Server(const ServerOptions& options);
  ~Server();  // drains the engine (stop()); call drain() first to answer HTTP requests in flight

  int port() const { return port_; }
  const ServedModel& model() const { return api_->served(); }
  const Engine& engine() const { return loaded_->engine(); }
  /// HttpServer::serve(): blocks until drain() has finished.
  void serve() { http_->serve(); }
  /// HttpServer::drain(): new requests 503, requests in flight answered to the end, serve() returns.
  void drain() { http_->drain(); }

 private:
  std::unique_ptr<LoadedModel> loaded_;
  std::unique_ptr<OpenAiApi> api_;
  std::unique_ptr<HttpServer> http_;
  int port_ = 0;
};

}  // namespace spade::serve
