// ChatTemplate: the default ChatML chat format rendered token-in/token-out.
//
//   message             = <|im_start|> role "\n" content <|im_end|> "\n"
//   generation prompt   = <|im_start|> "assistant\n"
//   end of an assistant turn (the sampler's stop token) = <|im_end|>
//
// Special tokens are inserted by id; text pieces are encoded separately, always at the same
// boundaries: enc(role), enc("\n"), enc(content), enc("\n"), enc("assistant"), enc("\n"). Because the
// boundaries are fixed, appending never changes earlier tokens (no re-tokenization of history,
// trainer-anchors §2).
//
// Append convention for multi-turn rollouts: a sampled assistant turn ends with <|im_end|> (the stop
// token is kept); the "\n" that closes it in the rendered form is emitted by the NEXT appended turn:
//   ids_for_turn(role, text) = enc("\n") <|im_start|> enc(role) enc("\n") enc(text) <|im_end|> enc("\n")
//                              <|im_start|> enc("assistant") enc("\n")
// Hence render(msgs, true) + enc(a) + [<|im_end|>] + ids_for_user_turn(u)
//    == render(msgs + {assistant: a, user: u}, true)
// (exactly, when the sampled ids of the assistant turn equal enc(a); in a rollout the sampled ids are
// kept as they are). An assistant turn cut by max_new_tokens must be closed with close_turn_ids()
// ({<|im_end|>}) before appending.
// Thread safety: const methods are safe concurrently (the tokenizer is only read).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "policy/tokenizer.h"

namespace spade::policy {

struct ChatMessage {
  std::string role;     // "system" | "user" | "assistant" | "tool" ...
  std::string content;
};

class ChatTemplate {
 public:
  /// Keeps a reference to `tokenizer` (must outlive this object). Throws spade::Error if the
  /// tokenizer lacks <|im_start|> or <|im_end|>.
  explicit ChatTemplate(const Tokenizer& tokenizer);

  /// Ids of the conversation (format above), plus the generation prompt if requested.
  std::vector<int64_t> render(const std::vector<ChatMessage>& messages, bool add_generation_prompt) const;

  /// The same conversation as text (for logs; never tokenized again).
  std::string render_text(const std::vector<ChatMessage>& messages, bool add_generation_prompt) const;

  /// Ids to append after an assistant turn that ended with <|im_end|>: closes it, adds a `role` turn
  /// with `text`, and opens the next assistant turn (see the header comment).
  std::vector<int64_t> ids_for_turn(const std::string& role, const std::string& text) const;
  std::vector<int64_t> ids_for_user_turn(const std::string& text) const { return ids_for_turn("user", text); }

  /// <|im_start|> enc("assistant") enc("\n").
  std::vector<int64_t> generation_prompt_ids() const;
  /// {<|im_end|>}: closes an assistant turn that was cut by the token limit.
  std::vector<int64_t> close_turn_ids() const { return {im_end_}; }

  int64_t im_start_id() const { return im_start_; }
  /// The end-of-turn id: give it to SamplingParams::stop_token_ids.
  int64_t eos_id() const { return im_end_; }

 private:
  void append_message(std::vector<int64_t>& out, const std::string& role, const std::string& content) const;
  const Tokenizer& tok_;
  int64_t im_start_, im_end_;
  std::vector<int64_t> newline_;
};

}  // namespace spade::policy
