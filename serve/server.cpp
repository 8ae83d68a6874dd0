#include "serve/server.h"

#include <torch/torch.h>

#include <chrono>

#include "common/error.h"
#include "policy/checkpoint.h"
#include "policy/stop_tokens.h"

namespace spade::serve {

Server::Server(const ServerOptions& o) {
  if (o.dtype != "float32" && o.dtype != "bfloat16")
    throw spade::Error("serve: --dtype must be float32 or bfloat16, not '" + o.dtype + "'");
  const c10::ScalarType dtype = o.dtype == "bfloat16" ? torch::kBFloat16 : torch::kFloat32;
  policy::Transformer model = policy::load_checkpoint(o.checkpoint, dtype);
  try {
    model->to(torch::Device(o.device));
  } catch (const c10::Error& e) {  // a malformed name, or a device this LibTorch build or machine lacks
    const std::string what = e.what();
    throw spade::Error("serve: cannot put the model on --device '" + o.device + "': " + what.substr(0, what.find('\n')));
  }
  model->eval();
  tok_ = policy::Tokenizer::load_dir(o.checkpoint);

  ServedModel m;
  m.name = o.model_name.empty() ? o.checkpoint : o.model_name;
  m.context_length = model->config().max_position_embeddings;
  m.vocab_size = model->config().vocab_size;
  m.text_stop_ids = policy::stop_token_ids(model->config(), nullptr);
  m.created = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  try {
    chat_ = std::make_unique<policy::ChatTemplate>(policy::ChatTemplate::for_checkpoint(o.checkpoint, tok_));
    m.chat_stop_ids = policy::stop_token_ids(model->config(), chat_.get());
  } catch (const spade::Error& e) {  // e.g. a base model's tokenizer without the format's special tokens
    m.no_chat = e.what();
  }

  const policy::Tokenizer* tok = &tok_;
  engine_ = std::make_unique<Engine>(
      model, [tok](const std::vector<int64_t>& ids) { return decode_lenient(*tok, ids); }, o.engine);
  api_ = std::make_unique<OpenAiApi>(*engine_, tok_, chat_.get(), std::move(m));
  HttpOptions http = o.http;
  if (http.threads == 0) http.threads = o.engine.max_batch + static_cast<int>(o.engine.max_queue) + 16;
  http_ = std::make_unique<HttpServer>(*api_, *engine_, http);
  port_ = http_->bind();
}

Server::~Server() {
  http_.reset();
  engine_->stop();
}

}  // namespace spade::serve
