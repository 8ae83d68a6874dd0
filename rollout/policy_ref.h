// The policy as the rollout code sees it: the model, its tokenizer and its chat template.
#pragma once
#include "policy/chat_template.h"
#include "policy/tokenizer.h"
#include "policy/transformer.h"

namespace spade::rollout {

/// Non-owning view of the policy; the referenced objects must outlive it.
struct PolicyRef {
  policy::Transformer& model;
  const policy::Tokenizer& tokenizer;
  const policy::ChatTemplate& chat;
};

}  // namespace spade::rollout
