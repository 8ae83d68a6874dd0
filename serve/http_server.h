// HttpServer: the HTTP front end of `spade serve` (issue 20), cpp-httplib over an OpenAiApi.
//
//   GET  /health                  {"status": "ok" | "draining", "model", and the engine's counts}
//   GET  /v1/models, /v1/models/{id}
//   POST /v1/chat/completions, /v1/completions   (OpenAiApi; "stream": true -> text/event-stream)
// Every error is OpenAI's error object (serve/api_response.h): 400 malformed JSON or fields, 401 a
// missing or wrong API key (/v1/ paths, when a key is set), 404 an unknown model or path, 413 a body over
// max_request_bytes, 429 the engine's queue is full, 503 draining, 500 an engine failure. No request
// stops the server. A streaming client that disconnects is noticed at its next event, or within
// ~100 ms while no event is due, and its request leaves the batch.
// Thread-safety: bind() and serve() from one thread; drain() from any thread (e.g. a signal watcher).
#pragma once

#include <condition_variable>
#include <cstddef>
#include <memory>
#include <mutex>
#include <string>

#include "serve/engine.h"
#include "serve/openai_api.h"

namespace spade::serve {

struct HttpOptions {
  std::string host = "127.0.0.1";   // loopback unless asked otherwise
  int port = 8000;                  // 0: any free port (bind() returns it)
  std::string api_key;              // "": no authentication; else "Authorization: Bearer <key>" on /v1/
  size_t max_request_bytes = 4u << 20;  // larger bodies: 413
  int threads = 0;                  // worker threads: connections served at once (more wait for one);
                                    // must be >= 1 here (0 is Server's "pick": see ServerOptions)
  bool log_requests = false;        // one line per request on stderr
};

class HttpServer {
 public:
  /// Keeps references to `api` and `engine` (they must outlive it). Throws spade::Error for threads < 1.
  HttpServer(OpenAiApi& api, const Engine& engine, HttpOptions options);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  /// Binds host:port; returns the port bound (the one chosen for port 0). Throws spade::Error naming
  /// the address when it cannot be bound.
  int bind();
  /// Serves until drain() has finished (blocks). Throws spade::Error when called before bind().
  void serve();
  /// Graceful stop: new requests get 503, requests in flight (streams included) are answered to the
  /// end, then serve() returns. Blocks until then; idempotent.
  void drain();

 private:
  std::shared_ptr<void> enter();
  class Listener;

  OpenAiApi& api_;
  const Engine& engine_;
  const HttpOptions options_;
  std::unique_ptr<Listener> svr_;
  bool bound_ = false;
  std::mutex mu_;
  std::condition_variable cv_;
  bool draining_ = false;
  bool serving_ = false;  // serve() is in (or about to enter) httplib's listen loop
  int in_flight_ = 0;
};

}  // namespace spade::serve
