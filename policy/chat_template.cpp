#include "policy/chat_template.h"

namespace spade::policy {

ChatTemplate::ChatTemplate(const Tokenizer& tokenizer)
    : tok_(tokenizer),
      im_start_(tokenizer.token_id(kImStart)),
      im_end_(tokenizer.token_id(kImEnd)),
      newline_(tokenizer.encode("\n")) {}

namespace {
void add(std::vector<int64_t>& out, const std::vector<int64_t>& ids) { out.insert(out.end(), ids.begin(), ids.end()); }
}  // namespace

void ChatTemplate::append_message(std::vector<int64_t>& out, const std::string& role,
                                  const std::string& content) const {
  out.push_back(im_start_);
  add(out, tok_.encode(role));
  add(out, newline_);
  add(out, tok_.encode(content));
  out.push_back(im_end_);
}

std::vector<int64_t> ChatTemplate::render(const std::vector<ChatMessage>& messages, bool add_generation_prompt) const {
  std::vector<int64_t> out;
  for (const auto& m : messages) {
    append_message(out, m.role, m.content);
    add(out, newline_);
  }
  if (add_generation_prompt) add(out, generation_prompt_ids());
  return out;
}

std::string ChatTemplate::render_text(const std::vector<ChatMessage>& messages, bool add_generation_prompt) const {
  std::string out;
  for (const auto& m : messages) out += std::string(kImStart) + m.role + "\n" + m.content + kImEnd + "\n";
  if (add_generation_prompt) out += std::string(kImStart) + "assistant\n";
  return out;
}

std::vector<int64_t> ChatTemplate::ids_for_turn(const std::string& role, const std::string& text) const {
  std::vector<int64_t> out = newline_;  // closes the assistant turn that ended with <|im_end|>
  append_message(out, role, text);
  add(out, newline_);
  add(out, generation_prompt_ids());
  return out;
}

std::vector<int64_t> ChatTemplate::generation_prompt_ids() const {
  std::vector<int64_t> out{im_start_};
  add(out, tok_.encode("assistant"));
  add(out, newline_);
  return out;
}

}  // namespace spade::policy
