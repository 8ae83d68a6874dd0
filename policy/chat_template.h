// ChatTemplate: a family's chat format (policy/chat_formats.h: ChatML, Qwen2, Llama 3, Llama 2, Mistral)
// rendered token-in/token-out, for every rollout (prompts, multi-turn episodes, the sampler's stop id).
//
// Special tokens are inserted by id (never parsed from text); text pieces are encoded separately
// (Tokenizer::encode, parse_special = false) at boundaries fixed per format, so appending a turn never
// changes earlier tokens: the history is never re-tokenized (trainer-anchors §2). enc(x) below is
// tok.encode(x); [T] is the id of special token T. Formats (text forms and sources: chat_formats.h):
//
//   kChatML (Qwen3's template, spade's tiny default):
//     message         = [<|im_start|>] enc(role) enc("\n") enc(content) [<|im_end|>] enc("\n")
//     gen. prompt     = [<|im_start|>] enc("assistant") enc("\n")
//     end of turn     = <|im_end|>
//     ids_for_turn(r, t) = enc("\n") message(r, t) gen.prompt   (the "\n" closes the sampled turn)
//   kQwen2 (Qwen2.5's template; Qwen2's): kChatML's pieces, plus, when messages[0] is not "system", a
//     leading message("system", default_system()) (Qwen2.5: kQwen25DefaultSystem; for_checkpoint takes
//     the text from the template, chatml_default_system()). Assistant contents are never shortened.
//   kLlama3 (Llama 3 / 3.1 template without the 3.1 date header):
//     conversation    = [<|begin_of_text|>] message...
//     message         = [<|start_header_id|>] enc(role) [<|end_header_id|>] enc("\n\n") enc(trim(content))
//                       [<|eot_id|>]                    (trim = the template's `| trim`: " \t\n\r")
//     gen. prompt     = [<|start_header_id|>] enc("assistant") [<|end_header_id|>] enc("\n\n")
//     end of turn     = <|eot_id|>
//     ids_for_turn(r, t) = message(r, t) gen.prompt
//   kLlama2 (Llama 2 chat; the system message is folded into the first user message):
//     user message    = [<s>] enc("[INST] " + trim(content') + " [/INST]")
//                       content' = "<<SYS>>\n" + system + "\n<</SYS>>\n\n" + content for the first one
//     assistant msg   = enc(" " + trim(content) + " ") [</s>]
//     gen. prompt     = (none: "[/INST]" opens the answer)
//     end of turn     = </s>
//     ids_for_turn(user, t) = user message(t)
//   kMistral (Mistral 7B Instruct v0.1/v0.2; system text prepended to the first user message + "\n\n"):
//     conversation    = [<s>] message...
//     user message    = enc("[INST] " + content' + " [/INST]");  assistant msg = enc(content) [</s>]
//     gen. prompt     = (none);  end of turn = </s>
//     ids_for_turn(user, t) = user message(t)
//
// Append convention for multi-turn rollouts: a sampled assistant turn ends with the end-of-turn id (the
// sampler's stop token is kept); ids_for_turn() then closes it (ChatML's "\n"), adds the role turn and
// opens the next assistant turn. Hence, for every format,
//   render(msgs, true) + A + [end of turn] + ids_for_turn("user", u)
//     == render(msgs + {assistant: a, user: u}, true)
// where A is the template's encoding of the assistant content a (enc(a); Llama 3 enc(trim(a));
// Llama 2 enc(" " + trim(a) + " ")). In a rollout the sampled ids are kept as they are. An assistant
// turn cut by max_new_tokens must be closed with close_turn_ids() before appending.
//
// Roles. ChatML, Qwen2 and Llama 3 put any role name in the header. The "tool" role (a tool's result) is
// mapped as follows (documented choice, checked by tests/policy/test_chat_template.cpp):
//   ChatML, Qwen2: as Qwen2.5/Qwen3 render it, a user turn with content "<tool_response>\n" + result +
//           "\n</tool_response>"; render() groups consecutive tool messages into one user turn as Qwen
//           does, its content the results' <tool_response> blocks joined by "\n" and encoded as one piece
//           (Qwen2.5 has no <tool_response> token, so separate pieces would split HF's ">\n" at the joint).
//   Llama 3, Llama 2, Mistral: a user turn with the result as its content (none of these models was
//           trained with a tool role: the Llama 2 / Mistral templates reject any other role, Llama 3.0's
//           would print "tool" as an unknown header).
// Llama 2 / Mistral: after the optional leading system message roles must alternate user/assistant
// (tool counting as user), as their templates require; a system message elsewhere is an error.
// ChatML: assistant messages before the last user message keep only the text after their last
// "</think>" (Qwen3's template), so render() matches render_chat() for Qwen3 histories; sampled turns
// in a rollout keep their reasoning (they are never re-rendered). Qwen2 keeps every assistant content
// verbatim, <think> blocks included, as Qwen2.5's template does.
// Tools: ChatTemplate renders no tools system block and no structured tool calls (render_chat does);
// an assistant turn whose content is the tool-call text ("<tool_call>\n{...}\n</tool_call>", as the
// model samples it) renders as Qwen2.5 / Qwen3 render a message with that tool call and empty content.
//
// Text: with a tokenizer for which decode(enc(x) + enc(y)) == x + y (byte-level BPE: Qwen, Llama 3;
// spade's SentencePiece models, which have no dummy prefix) decode(render(m, g)) == render_text(m, g)
// == render_chat(format, m, g). A SentencePiece model with add_dummy_prefix (Meta's Llama 2 / Mistral
// tokenizer.model) prefixes every encoded piece with "▁": user turns then equal Meta's own encoding
// ("▁[INST]..."), assistant history turns gain one extra leading space.
// Thread safety: const methods are safe concurrently (the tokenizer is only read).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "policy/chat_formats.h"
#include "policy/tokenizer.h"

namespace spade::policy {

class ChatTemplate {
 public:
  /// The ChatML format (spade's tiny models, Qwen3). Keeps a reference to `tokenizer` (must outlive
  /// this object). Throws spade::Error if the tokenizer lacks <|im_start|> or <|im_end|>.
  explicit ChatTemplate(const Tokenizer& tokenizer);

  /// `format` over `tokenizer` (kQwen2 with Qwen2.5's default system message). Throws spade::Error
  /// naming the format and the token when the tokenizer lacks one of the format's special tokens
  /// (ChatML, Qwen2: <|im_start|> <|im_end|>; Llama 3:
  /// <|begin_of_text|> <|start_header_id|> <|end_header_id|> <|eot_id|>; Llama 2 / Mistral: <s> </s>).
  ChatTemplate(const Tokenizer& tokenizer, ChatFormat format);

  /// The template of the checkpoint (or tokenizer) directory `dir`: the format is
  /// detect_chat_format(DIR/tokenizer_config.json, config.json "model_type", config.json "vocab_size"
  /// or else tokenizer.vocab_size()); missing files count as empty (-> ChatML). For kQwen2 the default
  /// system message is chatml_default_system(tokenizer_config.json), or kQwen25DefaultSystem when the
  /// template has none (or there is no template: model_type "qwen2"). Throws spade::Error for
  /// a file that is not valid JSON (naming it) or a tokenizer lacking the detected format's tokens
  /// (naming the format, the token and `dir`).
  static ChatTemplate for_checkpoint(const std::string& dir, const Tokenizer& tokenizer);

  /// The format detect_chat_format picks for `dir` (as for_checkpoint, without building a template).
  static ChatFormat detect_format(const std::string& dir, const Tokenizer& tokenizer);

  ChatFormat format() const { return format_; }
  /// kQwen2: the system message render() inserts when the conversation has none; "" for other formats.
  const std::string& default_system() const { return default_system_; }

  /// Ids of the conversation (formats above), plus the generation prompt if requested (none for
  /// Llama 2 / Mistral). Throws spade::Error for Llama 2 / Mistral messages that do not alternate.
  std::vector<int64_t> render(const std::vector<ChatMessage>& messages, bool add_generation_prompt) const;

  /// The same conversation as text, from render_chat() (chat_formats.h, an independent implementation
  /// of the published templates); for logs, never tokenized again.
  std::string render_text(const std::vector<ChatMessage>& messages, bool add_generation_prompt) const;

  /// Ids to append after an assistant turn that ended with eos_id(): closes it, adds a `role` turn with
  /// `text`, and opens the next assistant turn (see the header comment). role "tool" is mapped as
  /// documented above. Throws spade::Error for Llama 2 / Mistral when `role` is not "user" or "tool".
  std::vector<int64_t> ids_for_turn(const std::string& role, const std::string& text) const;
  std::vector<int64_t> ids_for_user_turn(const std::string& text) const { return ids_for_turn("user", text); }

  /// Ids to append after an assistant turn that called tools (ended with eos_id()): the results of its
  /// calls, in order, as the format's template renders tool messages, then the next assistant turn's
  /// opening. ChatML / Qwen2: one user turn whose content is the results' <tool_response> blocks joined
  /// by "\n" (Qwen groups consecutive tool messages); Llama 3: one "ipython" turn per result (Llama 3.1;
  /// its content trimmed as every Llama 3 turn here). Throws spade::Error for an empty list, and for
  /// Llama 2 / Mistral (no tool results in their templates), naming the format.
  std::vector<int64_t> ids_for_tool_results(const std::vector<std::string>& results) const;

  /// Ids that open an assistant turn (formats above; empty for Llama 2 / Mistral).
  std::vector<int64_t> generation_prompt_ids() const;
  /// {eos_id()}: closes an assistant turn that was cut by the token limit.
  std::vector<int64_t> close_turn_ids() const { return {end_}; }

  /// <|im_start|> for ChatML / Qwen2; -1 for the other formats.
  int64_t im_start_id() const { return is_chatml_family(format_) ? start_ : -1; }
  /// The end-of-turn id (<|im_end|>, <|eot_id|>, </s>): give it to SamplingParams::stop_token_ids.
  int64_t eos_id() const { return end_; }

 private:
  static ChatFormat detect(const std::string& dir, const Tokenizer& tokenizer, const nlohmann::json& tokenizer_config);
  void add_text(std::vector<int64_t>& out, const std::string& text) const;
  void append_message(std::vector<int64_t>& out, const std::string& role, const std::string& content) const;
  const Tokenizer* tok_;
  ChatFormat format_;
  int64_t bos_ = -1;    // <|begin_of_text|> / <s>; -1 for ChatML
  int64_t start_ = -1;  // <|im_start|> / <|start_header_id|>; -1 for Llama 2 / Mistral
  int64_t mid_ = -1;    // <|end_header_id|> (Llama 3 only)
  int64_t end_ = -1;    // end of turn
  std::string default_system_;  // kQwen2 only
};

}  // namespace spade::policy
