#include "serve/loaded_model.h"

#include <torch/torch.h>

#include <chrono>

#include "common/error.h"
#include "policy/checkpoint.h"
#include "policy/stop_tokens.h"

namespace spade::serve {

LoadedModel::LoadedModel(const std::string& checkpoint, const std::string& model_name, const std::string& device,
                         const std::string& dtype_name, const Engine::Options& engine) {
  if (dtype_name != "float32" && dtype_name != "bfloat16")
    throw spade::Error("serve: --dtype must be float32 or bfloat16, not '" + dtype_name + "'");
  const c10::ScalarType dtype = dtype_name == "bfloat16" ? torch::kBFloat16 : torch::kFloat32;
  policy::Transformer model = policy::load_checkpoint(checkpoint, dtype);
  try {
    model->to(torch::Device(device));
  } catch (const c10::Error& e) {  // a malformed name, or a device this LibTorch build or machine lacks
    const std::string what = e.what();
    throw spade::Error("serve: cannot put the model on --device '" + device + "': " + what.substr(0, what.find('\n')));
  }
  model->eval();
  tok_ = policy::Tokenizer::load_dir(checkpoint);

  served_.name = model_name.empty() ? checkpoint : model_name;
  served_.context_length = model->config().max_position_embeddings;
  served_.vocab_size = model->config().vocab_size;
  served_.text_stop_ids = policy::stop_token_ids(model->config(), nullptr);
  served_.created =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  try {
    chat_ = std::make_unique<policy::ChatTemplate>(policy::ChatTemplate::for_checkpoint(checkpoint, tok_));
    served_.chat_stop_ids = policy::stop_token_ids(model->config(), chat_.get());
  } catch (const spade::Error& e) {  // e.g. a base model's tokenizer without the format's special tokens
    served_.no_chat = e.what();
  }
  const policy::Tokenizer* tok = &tok_;
  engine_ = std::make_unique<Engine>(
      model, [tok](const std::vector<int64_t>& ids) { return decode_lenient(*tok, ids); }, engine);
}

LoadedModel::~LoadedModel() { engine_->stop(); }

}  // namespace spade::serve
