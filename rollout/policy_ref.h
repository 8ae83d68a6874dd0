// The policy as the rollout code sees it: the model, its tokenizer and its chat template.
#pragma once
#include <cstdint>
#include <vector>

#include "policy/chat_template.h"
#include "policy/stop_tokens.h"
#include "policy/tokenizer.h"
#include "policy/transformer.h"

namespace spade::rollout {

/// Non-owning view of the policy; the referenced objects must outlive it.
struct PolicyRef {
  policy::Transformer& model;
  const policy::Tokenizer& tokenizer;
  const policy::ChatTemplate& chat;

  /// The ids that end a sampled turn: the chat template's end of turn and every eos id of the
  /// checkpoint (policy::stop_token_ids). Every sampling path of rollout/ stops on exactly these.
  std::vector<int64_t> stop_token_ids() const { return policy::stop_token_ids(model->config(), &chat); }
};

}  // namespace spade::rollout
