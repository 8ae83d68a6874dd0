#include "serve/chat_prompt.h"

#include <optional>

#include "common/error.h"
#include "serve/api_request.h"

namespace spade::serve {

std::vector<int64_t> chat_prompt_ids(const policy::ChatTemplate& chat, const std::vector<policy::RichMessage>& messages,
                                     const std::vector<nlohmann::ordered_json>& tools) {
  const policy::ChatFormat format = chat.format();
  const bool qwen = policy::is_chatml_family(format);
  const std::string name = policy::chat_format_name(format);
  if (!tools.empty() && !qwen)
    throw ApiError(400, "this checkpoint's chat format (" + name + ") cannot carry tools; only chatml and qwen2 do",
                   "tools");
  std::vector<policy::ChatMessage> plain;
  size_t first = 0;
  if (!tools.empty()) {
    std::optional<std::string> system;
    if (!messages.empty() && messages[0].role == "system") {
      system = messages[0].content;
      first = 1;
    } else if (format == policy::ChatFormat::kQwen2) {
      system = chat.default_system();
    }
    plain.push_back({"system", policy::qwen_tools_system(system, tools)});
  }
  for (size_t i = first; i < messages.size(); ++i) {
    const policy::RichMessage& m = messages[i];
    if (!m.tool_calls.empty() && !qwen)
      throw ApiError(400, "messages[" + std::to_string(i) + "] has tool_calls, which this checkpoint's chat format (" +
                              name + ") cannot carry; only chatml and qwen2 do",
                     "messages");
    plain.push_back({m.role, qwen ? policy::qwen_assistant_content(m.content, m.tool_calls) : m.content});
  }
  try {
    return chat.render(plain, /*add_generation_prompt=*/true);
  } catch (const spade::Error& e) {  // the template's own rule (Llama 2 / Mistral alternation)
    throw ApiError(400, e.what(), "messages");
  }
}

}  // namespace spade::serve
