// The prompt of a chat request: its messages (and tools) in the checkpoint's chat template, as token
// ids (policy/chat_template.h: token-in/token-out, the same ids `spade generate --chat` and the rollouts
// use for the same messages). Torch-free. Thread-safety: a pure function of const inputs; thread-safe.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <vector>

#include "policy/chat_template.h"

namespace spade::serve {

/// ChatTemplate::render(messages, add_generation_prompt = true), where for the Qwen formats (kChatML,
/// kQwen2), as their templates write them:
///   - with `tools`, the system turn's content is policy::qwen_tools_system(system message, or kQwen2's
///     default system message, tools) (a conversation without a system message gains one);
///   - an assistant message's tool calls are written into its content (policy::qwen_assistant_content).
/// Throws ApiError(400, param "tools" or "messages") when tools or tool calls are given and the format is
/// not kChatML / kQwen2 (Llama 3, Llama 2 and Mistral templates carry none), or when the template
/// refuses the conversation (Llama 2 / Mistral: roles must alternate), with the template's reason.
std::vector<int64_t> chat_prompt_ids(const policy::ChatTemplate& chat, const std::vector<policy::RichMessage>& messages,
                                     const std::vector<nlohmann::ordered_json>& tools);

}  // namespace spade::serve
