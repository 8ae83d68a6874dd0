// The token ids that end a sampled response of a loaded policy: one definition for every sampling path
// (agent episodes, the designer, hint writing, `spade generate`), through rollout::PolicyRef or directly.
// Thread-safety: a pure function; thread-safe.
#pragma once

#include <cstdint>
#include <vector>

#include "policy/model_config.h"

namespace spade::policy {

class ChatTemplate;

/// SamplingParams::stop_token_ids for a policy whose config is `config`: the chat template's end of
/// turn first when `chat` is given (sampling an assistant turn; <|im_end|>, <|eot_id|>, </s>), then
/// every eos id of the checkpoint, ModelConfig::eos_token_ids: config.json's "eos_token_id" (an int or
/// a list) followed by generation_config.json's (load_model_config merges them; transformers'
/// generate() stops on each: e.g. Qwen3 {151645, 151643}, Llama 3.1 Instruct {128001, 128008, 128009}).
/// In that order, each id once; negative ids ("none") are left out. `chat` may be null (plain text).
std::vector<int64_t> stop_token_ids(const ModelConfig& config, const ChatTemplate* chat);

}  // namespace spade::policy
