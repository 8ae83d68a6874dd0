#include "policy/stop_tokens.h"

#include <algorithm>

#include "policy/chat_template.h"

namespace spade::policy {

std::vector<int64_t> stop_token_ids(const ModelConfig& config, const ChatTemplate* chat) {
  std::vector<int64_t> ids;
  auto add = [&ids](int64_t id) {
    if (id >= 0 && std::find(ids.begin(), ids.end(), id) == ids.end()) ids.push_back(id);
  };
  if (chat != nullptr) add(chat->eos_id());
  for (int64_t id : config.eos_token_ids) add(id);
  return ids;
}

}  // namespace spade::policy
