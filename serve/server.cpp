#include "serve/server.h"

namespace spade::serve {

Server::Server(const ServerOptions& o)
    : loaded_(std::make_unique<LoadedModel>(o.checkpoint, o.model_name, o.device, o.dtype, o.engine)) {
  api_ = std::make_unique<OpenAiApi>(loaded_->engine(), loaded_->tokenizer(), loaded_->chat(), loaded_->served());
  HttpOptions http = o.http;
  if (http.threads == 0) http.threads = o.engine.max_batch + static_cast<int>(o.engine.max_queue) + 16;
  http_ = std::make_unique<HttpServer>(*api_, loaded_->engine(), http);
  port_ = http_->bind();
}

Server::~Server() { http_.reset(); }

}  // namespace spade::serve
