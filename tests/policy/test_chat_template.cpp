// ChatTemplate token-in/token-out for every chat format (issue 4). Tokenizers: tiny byte-level BPE
// tokenizer.json files with each family's special tokens (tests/testing/tiny_bpe.h), for which
// decode(enc(x) + enc(y)) == x + y, so the text of an id sequence can be compared with render_chat()
// (policy/chat_formats.h), the independent text implementation of the published templates, itself
// checked against hand-written strings in test_chat_formats.cpp.
// Property per format: render(msgs, true) + A + [end of turn] + ids_for_turn("user", u)
//   == render(msgs + {assistant: a, user: u}, true), and its text == render_chat(...) of that
// conversation, where A is the assistant content as the published template writes it (by hand:
// ChatML and Mistral "{a}", Llama 3 "{a | trim}", Llama 2 " {a.strip()} ").
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>

#include "common/error.h"
#include "policy/chat_formats.h"
#include "policy/chat_template.h"
#include "tests/testing/test_util.h"
#include "tests/testing/tiny_bpe.h"

using namespace spade::policy;
using spade::fixtures::error_of;
using Ids = std::vector<int64_t>;

namespace {

Tokenizer tiny_tokenizer(const std::string& name, const std::vector<std::string>& specials) {
  const std::string dir = spade::fixtures::fresh_test_dir("policy_chat_template", name);
  return Tokenizer::load(spade::fixtures::write_tiny_bpe(dir, specials));
}

const std::vector<std::string>& specials_of(ChatFormat f) {
  switch (f) {
    case ChatFormat::kChatML:
    case ChatFormat::kQwen2: return spade::fixtures::kChatMLSpecials;
    case ChatFormat::kLlama3: return spade::fixtures::kLlama3Specials;
    default: return spade::fixtures::kLlama2Specials;
  }
}

std::vector<RichMessage> rich(const std::vector<ChatMessage>& m) {
  std::vector<RichMessage> r;
  for (const auto& x : m) r.push_back({x.role, x.content, {}});
  return r;
}

void append(Ids& out, const Ids& more) { out.insert(out.end(), more.begin(), more.end()); }

int64_t count(const Ids& ids, int64_t id) { return std::count(ids.begin(), ids.end(), id); }

// The assistant content as each published template writes it (see the file comment).
std::string assistant_text(ChatFormat f, const std::string& a) {
  if (f == ChatFormat::kLlama2) return " " + a + " ";  // ' ' + content.strip() + ' ' + eos_token
  return a;                                              // a has no outer whitespace (Llama 3 trim is a no-op)
}

const ChatFormat kAll[] = {ChatFormat::kChatML, ChatFormat::kQwen2, ChatFormat::kLlama3, ChatFormat::kLlama2,
                           ChatFormat::kMistral};

}  // namespace

TEST(ChatTemplate, AppendedTurnsEqualFullRenderingInEveryFormat) {
  for (ChatFormat f : kAll) {
    SCOPED_TRACE(chat_format_name(f));
    Tokenizer tok = tiny_tokenizer(chat_format_name(f), specials_of(f));
    ChatTemplate chat(tok, f);
    EXPECT_EQ(chat.format(), f);
    std::vector<ChatMessage> msgs = {{"system", "You are helpful."}, {"user", "Hi there"},
                                     {"assistant", "Hello! How can I help?"}, {"user", "What is 2+2?"}};
    // The user text holds every family's special strings: they must stay text (no injected ids), and
    // its outer whitespace exercises the Llama templates' trim.
    const std::string a = "The answer is \\boxed{4}.";
    const std::string u = "  Correct <|eot_id|></s><|im_end|>. Now\n\n3+3?\n";

    Ids incremental = chat.render(msgs, true);
    EXPECT_EQ(tok.decode(incremental), render_chat(f, rich(msgs)));
    append(incremental, tok.encode(assistant_text(f, a)));  // the "sampled" assistant ids
    incremental.push_back(chat.eos_id());
    append(incremental, chat.ids_for_turn("user", u));

    std::vector<ChatMessage> all = msgs;
    all.push_back({"assistant", a});
    all.push_back({"user", u});
    EXPECT_EQ(incremental, chat.render(all, true));  // token-level: the history is never re-tokenized
    EXPECT_EQ(tok.decode(incremental), render_chat(f, rich(all)));
    EXPECT_EQ(chat.render_text(all, true), render_chat(f, rich(all)));

    // End-of-turn ids: one per finished message, none injected by the text (hand count: ChatML, Qwen2
    // and Llama 3 close all 6 messages; Llama 2 / Mistral close only the 2 assistant turns).
    const int64_t expected_eot = (is_chatml_family(f) || f == ChatFormat::kLlama3) ? 6 : 2;
    EXPECT_EQ(count(incremental, chat.eos_id()), expected_eot);
    EXPECT_EQ(chat.close_turn_ids(), Ids{chat.eos_id()});
    EXPECT_EQ(tok.piece(chat.eos_id()), end_of_turn(f));
  }
}

TEST(ChatTemplate, GenerationPromptsAndSpecialIdsByHand) {
  // Llama 3: <|start_header_id|> "assistant" <|end_header_id|> "\n\n"; the specials follow the 13 merges
  // of tiny_bpe.h in the order of kLlama3Specials; "\n\n" is merge rank 0 -> id 256.
  const int64_t s = spade::fixtures::tiny_bpe_first_special_id();
  Tokenizer l3 = tiny_tokenizer("gen_llama3", spade::fixtures::kLlama3Specials);
  ChatTemplate c3(l3, ChatFormat::kLlama3);
  Ids gen = {s + 2};
  append(gen, l3.encode("assistant"));
  gen.push_back(s + 3);
  gen.push_back(256);
  EXPECT_EQ(c3.generation_prompt_ids(), gen);
  EXPECT_EQ(c3.eos_id(), s + 4);
  EXPECT_EQ(c3.im_start_id(), -1);
  EXPECT_EQ(c3.render({}, false), Ids{s});  // <|begin_of_text|> only
  // Llama 2 / Mistral: "[/INST]" opens the answer; no separate generation prompt.
  Tokenizer l2 = tiny_tokenizer("gen_llama2", spade::fixtures::kLlama2Specials);
  EXPECT_TRUE(ChatTemplate(l2, ChatFormat::kLlama2).generation_prompt_ids().empty());
  EXPECT_EQ(ChatTemplate(l2, ChatFormat::kMistral).eos_id(), s + 2);  // </s>
  // Llama 2: <s> starts every user turn; "[INST] hi [/INST]" is one text piece.
  Ids want = {s + 1};
  append(want, l2.encode("[INST] hi [/INST]"));
  EXPECT_EQ(ChatTemplate(l2, ChatFormat::kLlama2).render({{"user", " hi "}}, true), want);
  // ChatML keeps its im_start id.
  Tokenizer cm = tiny_tokenizer("gen_chatml", spade::fixtures::kChatMLSpecials);
  EXPECT_EQ(ChatTemplate(cm).im_start_id(), s + 1);
}

TEST(ChatTemplate, ToolRoleMapping) {
  // ChatML: Qwen2.5/Qwen3's rendering of a tool message after an assistant turn (by hand from their
  // templates): a user turn holding <tool_response>...</tool_response>.
  Tokenizer cm = tiny_tokenizer("tool_chatml", spade::fixtures::kChatMLSpecials);
  ChatTemplate chatml(cm, ChatFormat::kChatML);
  EXPECT_EQ(cm.decode(chatml.ids_for_turn("tool", "sunny")),
            "\n<|im_start|>user\n<tool_response>\nsunny\n</tool_response><|im_end|>\n<|im_start|>assistant\n");
  // The same ids as a user turn carrying Qwen's wrapper (what the episode runner appended before).
  EXPECT_EQ(chatml.ids_for_turn("tool", "sunny"), chatml.ids_for_user_turn("<tool_response>\nsunny\n</tool_response>"));
  // Consecutive tool results are grouped into one user turn, as render_chat (Qwen) does.
  std::vector<ChatMessage> m = {{"user", "Weather?"}, {"assistant", "<tool_call>x</tool_call>"},
                                {"tool", "sunny"}, {"tool", "20C"}};
  EXPECT_EQ(cm.decode(chatml.render(m, true)), render_chat(ChatFormat::kChatML, rich(m)));
  // Llama 3 / Llama 2 / Mistral: a tool turn is a user turn with the result as content.
  for (ChatFormat f : {ChatFormat::kLlama3, ChatFormat::kLlama2, ChatFormat::kMistral}) {
    SCOPED_TRACE(chat_format_name(f));
    Tokenizer tok = tiny_tokenizer(std::string("tool_") + chat_format_name(f), specials_of(f));
    ChatTemplate chat(tok, f);
    EXPECT_EQ(chat.ids_for_turn("tool", "sunny"), chat.ids_for_turn("user", "sunny"));
    std::vector<ChatMessage> conv = {{"user", "Weather?"}, {"assistant", "call it"}, {"tool", "sunny"}};
    EXPECT_EQ(tok.decode(chat.render(conv, true)), render_chat(f, rich(conv)));
    std::vector<ChatMessage> as_user = conv;
    as_user[2].role = "user";
    EXPECT_EQ(chat.render(conv, true), chat.render(as_user, true));
  }
}

TEST(ChatTemplate, QwenThinkingHistoryMatchesRenderChat) {
  Tokenizer cm = tiny_tokenizer("think", spade::fixtures::kChatMLSpecials);
  ChatTemplate chat(cm);
  std::vector<ChatMessage> m = {{"user", "a"}, {"assistant", "<think>\nreason\n</think>\n\nanswer"}, {"user", "b"}};
  // Hand: the assistant turn before the last user message keeps only "answer" (Qwen3 template).
  EXPECT_EQ(cm.decode(chat.render(m, true)),
            "<|im_start|>user\na<|im_end|>\n<|im_start|>assistant\nanswer<|im_end|>\n<|im_start|>user\nb<|im_end|>\n"
            "<|im_start|>assistant\n");
  EXPECT_EQ(cm.decode(chat.render(m, true)), render_chat(ChatFormat::kChatML, rich(m)));
}

// Qwen2 (Qwen2.5's template, read by hand from data/tokenizers/qwen2_5/tokenizer_config.json): without a
// system message the conversation starts with the default one; the reasoning of earlier assistant turns
// is kept; appending turns still equals the whole rendering.
TEST(ChatTemplate, Qwen2DefaultSystemAndVerbatimHistory) {
  Tokenizer cm = tiny_tokenizer("qwen2", spade::fixtures::kChatMLSpecials);
  ChatTemplate chat(cm, ChatFormat::kQwen2);
  EXPECT_EQ(chat.default_system(), "You are Qwen, created by Alibaba Cloud. You are a helpful assistant.");
  EXPECT_EQ(chat.im_start_id(), cm.token_id("<|im_start|>"));
  EXPECT_EQ(chat.eos_id(), cm.token_id("<|im_end|>"));
  const std::string sys = "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n";
  EXPECT_EQ(cm.decode(chat.render({}, false)), sys);
  const std::string a = "<think>\nreason\n</think>\n\nanswer";
  Ids incremental = chat.render({{"user", "a"}}, true);
  EXPECT_EQ(cm.decode(incremental), sys + "<|im_start|>user\na<|im_end|>\n<|im_start|>assistant\n");
  append(incremental, cm.encode(a));
  incremental.push_back(chat.eos_id());
  append(incremental, chat.ids_for_turn("user", "b"));
  const std::vector<ChatMessage> all = {{"user", "a"}, {"assistant", a}, {"user", "b"}};
  EXPECT_EQ(incremental, chat.render(all, true));
  EXPECT_EQ(cm.decode(incremental), sys + "<|im_start|>user\na<|im_end|>\n<|im_start|>assistant\n" + a +
                                        "<|im_end|>\n<|im_start|>user\nb<|im_end|>\n<|im_start|>assistant\n");
  EXPECT_EQ(chat.render_text(all, true), cm.decode(incremental));
  // A leading system message replaces the default: then Qwen2 and ChatML agree on reasoning-free turns.
  const std::vector<ChatMessage> with_sys = {{"system", "S"}, {"user", "a"}, {"assistant", "x"}, {"tool", "r"}};
  EXPECT_EQ(chat.render(with_sys, true), ChatTemplate(cm).render(with_sys, true));
}

TEST(ChatTemplate, ErrorsNameTheFormatAndToken) {
  Tokenizer cm = tiny_tokenizer("err_chatml", spade::fixtures::kChatMLSpecials);
  std::string e = error_of([&] { ChatTemplate(cm, ChatFormat::kLlama3); });
  EXPECT_NE(e.find("llama3"), std::string::npos) << e;
  EXPECT_NE(e.find("<|begin_of_text|>"), std::string::npos) << e;
  Tokenizer no_eot = tiny_tokenizer("err_noeot", {"<|begin_of_text|>", "<|start_header_id|>", "<|end_header_id|>"});
  e = error_of([&] { ChatTemplate(no_eot, ChatFormat::kLlama3); });
  EXPECT_NE(e.find("<|eot_id|>"), std::string::npos) << e;
  e = error_of([&] { ChatTemplate(cm, ChatFormat::kMistral); });
  EXPECT_NE(e.find("mistral"), std::string::npos) << e;
  EXPECT_NE(e.find("<s>"), std::string::npos) << e;
  Tokenizer l3 = tiny_tokenizer("err_llama3", spade::fixtures::kLlama3Specials);
  e = error_of([&] { ChatTemplate c(l3); });  // the one-argument constructor is ChatML
  EXPECT_NE(e.find("chatml"), std::string::npos) << e;
  EXPECT_NE(e.find("<|im_start|>"), std::string::npos) << e;

  Tokenizer l2 = tiny_tokenizer("err_llama2", spade::fixtures::kLlama2Specials);
  for (ChatFormat f : {ChatFormat::kLlama2, ChatFormat::kMistral}) {
    ChatTemplate chat(l2, f);
    e = error_of([&] { chat.ids_for_turn("system", "x"); });
    EXPECT_NE(e.find(chat_format_name(f)), std::string::npos) << e;
    EXPECT_THROW(chat.ids_for_turn("assistant", "x"), spade::Error);
    EXPECT_THROW(chat.render({{"user", "a"}, {"user", "b"}}, true), spade::Error);
    EXPECT_THROW(chat.render({{"user", "a"}, {"system", "b"}}, true), spade::Error);
    EXPECT_THROW(chat.render({{"assistant", "a"}}, true), spade::Error);
  }
}

TEST(ChatTemplate, ForCheckpointDetectsTheFormat) {
  auto dir_with = [](const std::string& name, const std::vector<std::string>& specials,
                     const std::string& tokenizer_config, const std::string& config) {
    const std::string d = spade::fixtures::fresh_test_dir("policy_chat_template_ckpt", name);
    spade::fixtures::write_tiny_bpe(d, specials);
    if (!tokenizer_config.empty()) std::ofstream(d + "/tokenizer_config.json") << tokenizer_config;
    if (!config.empty()) std::ofstream(d + "/config.json") << config;
    return d;
  };
  using spade::fixtures::kLlama3Specials;
  // tokenizer_config.json chat_template with Llama 3 header markers.
  std::string d = dir_with("l3_template", kLlama3Specials,
                           R"({"chat_template": "{{ '<|start_header_id|>' + message['role'] }}"})", "");
  Tokenizer t = Tokenizer::load_dir(d);
  ChatTemplate c = ChatTemplate::for_checkpoint(d, t);
  EXPECT_EQ(c.format(), ChatFormat::kLlama3);
  EXPECT_EQ(c.eos_id(), t.token_id("<|eot_id|>"));
  // No template: config.json model_type llama with a 128256 vocabulary -> Llama 3.
  d = dir_with("l3_config", kLlama3Specials, "", R"({"model_type": "llama", "vocab_size": 128256})");
  Tokenizer t2 = Tokenizer::load_dir(d);
  EXPECT_EQ(ChatTemplate::for_checkpoint(d, t2).format(), ChatFormat::kLlama3);
  // model_type mistral -> Mistral.
  d = dir_with("mistral", spade::fixtures::kLlama2Specials, "{}", R"({"model_type": "mistral"})");
  Tokenizer t3 = Tokenizer::load_dir(d);
  EXPECT_EQ(ChatTemplate::for_checkpoint(d, t3).format(), ChatFormat::kMistral);
  // Nothing to go by -> ChatML.
  d = dir_with("none", spade::fixtures::kChatMLSpecials, "", "");
  Tokenizer t4 = Tokenizer::load_dir(d);
  EXPECT_EQ(ChatTemplate::for_checkpoint(d, t4).format(), ChatFormat::kChatML);
  EXPECT_EQ(ChatTemplate::for_checkpoint(d, t4).default_system(), "");
  // A ChatML template with a literal default system turn (Qwen2-Instruct's "You are a helpful
  // assistant.") -> Qwen2 with that text, whatever model_type says.
  using spade::fixtures::kChatMLSpecials;
  d = dir_with("qwen2_template", kChatMLSpecials,
               R"({"chat_template": "{% if messages[0]['role'] != 'system' %}{{ '<|im_start|>system\nYou are a )"
               R"(helpful assistant.<|im_end|>\n' }}{% endif %}"})",
               R"({"model_type": "qwen3"})");
  Tokenizer t6 = Tokenizer::load_dir(d);
  ChatTemplate q2 = ChatTemplate::for_checkpoint(d, t6);
  EXPECT_EQ(q2.format(), ChatFormat::kQwen2);
  EXPECT_EQ(q2.default_system(), "You are a helpful assistant.");
  EXPECT_EQ(t6.decode(q2.render({{"user", "hi"}}, false)),
            "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n");
  // No template, model_type qwen2 (Qwen2 / Qwen2.5 checkpoints) -> Qwen2 with Qwen2.5's default;
  // model_type qwen3 -> ChatML.
  d = dir_with("qwen2_config", kChatMLSpecials, "", R"({"model_type": "qwen2"})");
  Tokenizer t7 = Tokenizer::load_dir(d);
  EXPECT_EQ(ChatTemplate::for_checkpoint(d, t7).format(), ChatFormat::kQwen2);
  EXPECT_EQ(ChatTemplate::for_checkpoint(d, t7).default_system(), kQwen25DefaultSystem);
  d = dir_with("qwen3_config", kChatMLSpecials, "", R"({"model_type": "qwen3"})");
  Tokenizer t8 = Tokenizer::load_dir(d);
  EXPECT_EQ(ChatTemplate::for_checkpoint(d, t8).format(), ChatFormat::kChatML);
  // Detected ChatML but a Llama 3 tokenizer: the error names the format, the token and the directory.
  d = dir_with("mismatch", kLlama3Specials, "", "");
  Tokenizer t5 = Tokenizer::load_dir(d);
  std::string e = error_of([&] { ChatTemplate::for_checkpoint(d, t5); });
  EXPECT_NE(e.find("chatml"), std::string::npos) << e;
  EXPECT_NE(e.find("<|im_start|>"), std::string::npos) << e;
  EXPECT_NE(e.find(d), std::string::npos) << e;
  // A broken tokenizer_config.json is named.
  d = dir_with("broken", kLlama3Specials, "{not json", "");
  e = error_of([&] { ChatTemplate::detect_format(d, t5); });
  EXPECT_NE(e.find("tokenizer_config.json"), std::string::npos) << e;
}

// Issue 21: the results of one turn's tool calls. ChatML: the ids render() gives the same conversation
// (Qwen groups consecutive tool messages into one user turn); Llama 3: Llama 3.1's ipython turns,
// written by hand from its template ("<|start_header_id|>ipython<|end_header_id|>\n\n" + content +
// "<|eot_id|>"); Llama 2 / Mistral have none.
TEST(ChatTemplate, ToolResultsOfOneTurn) {
  Tokenizer cm = tiny_tokenizer("tool_results_chatml", spade::fixtures::kChatMLSpecials);
  ChatTemplate chatml(cm, ChatFormat::kChatML);
  std::vector<ChatMessage> head = {{"user", "Weather?"}, {"assistant", "<tool_call>x</tool_call>"}};
  std::vector<ChatMessage> full = head;
  full.push_back({"tool", "sunny"});
  full.push_back({"tool", "20C"});
  Ids ids = chatml.render(head, false);
  ids.pop_back();  // render(head) ends the assistant turn with "<|im_end|>\n"; the sampled turn ends at <|im_end|>
  append(ids, chatml.ids_for_tool_results({"sunny", "20C"}));
  EXPECT_EQ(ids, chatml.render(full, true));
  EXPECT_EQ(chatml.ids_for_tool_results({"sunny"}), chatml.ids_for_turn("tool", "sunny"));
  EXPECT_THROW(chatml.ids_for_tool_results({}), spade::Error);

  Tokenizer l3 = tiny_tokenizer("tool_results_llama3", spade::fixtures::kLlama3Specials);
  ChatTemplate llama3(l3, ChatFormat::kLlama3);
  EXPECT_EQ(l3.decode(llama3.ids_for_tool_results({"sunny", "20C"})),
            "<|start_header_id|>ipython<|end_header_id|>\n\nsunny<|eot_id|>"
            "<|start_header_id|>ipython<|end_header_id|>\n\n20C<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\n");
  for (ChatFormat f : {ChatFormat::kLlama2, ChatFormat::kMistral}) {
    Tokenizer tok = tiny_tokenizer(std::string("tool_results_") + chat_format_name(f), specials_of(f));
    ChatTemplate chat(tok, f);
    EXPECT_NE(error_of([&] { chat.ids_for_tool_results({"sunny"}); }).find(chat_format_name(f)), std::string::npos);
  }
}

// Issue 21: Llama 3.1 Instruct's opening with tools, written out by hand from Meta's published template
// (tokenizer_config.json chat_template of Llama-3.1-8B-Instruct, defaults tools_in_user_message = true
// and date_string = "26 Jul 2024"): the system header, "Environment: ipython\n", the two date lines, the
// trimmed system message, <|eot_id|>; then the user turn with the tool instructions (no space before
// "Do not use variables."), each tool as `tojson(indent=4)` + "\n\n", then the trimmed first message.
TEST(ChatTemplate, Llama31ToolOpeningByHand) {
  Tokenizer l3 = tiny_tokenizer("tool_opening_llama3", spade::fixtures::kLlama3Specials);
  ChatTemplate llama3(l3, ChatFormat::kLlama3);
  std::vector<nlohmann::ordered_json> tools = {nlohmann::ordered_json::parse(
      R"({"type": "function", "function": {"name": "get_weather", "description": "Weather of a city.", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}})")};
  const std::string expected =
      "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\n"
      "Environment: ipython\nCutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n\n"
      "Be brief.<|eot_id|><|start_header_id|>user<|end_header_id|>\n\n"
      "Given the following functions, please respond with a JSON for a function call with its proper arguments "
      "that best answers the given prompt.\n\nRespond in the format {\"name\": function name, \"parameters\": "
      "dictionary of argument name and its value}.Do not use variables.\n\n"
      "{\n    \"type\": \"function\",\n    \"function\": {\n        \"name\": \"get_weather\",\n"
      "        \"description\": \"Weather of a city.\",\n        \"parameters\": {\n            \"type\": \"object\",\n"
      "            \"properties\": {\n                \"city\": {\n                    \"type\": \"string\"\n"
      "                }\n            },\n            \"required\": [\n                \"city\"\n            ]\n"
      "        }\n    }\n}\n\nWeather in Paris?<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n";
  EXPECT_EQ(l3.decode(llama3.render(tool_use_opening(ChatFormat::kLlama3, " Be brief. ", "Weather in Paris?\n", tools), true)),
            expected);
  // ChatML / Qwen: the system turn carries qwen_tools_system (checked against the real Qwen3 and
  // Qwen2.5 templates in test_real_tokenizers.cpp).
  const std::vector<ChatMessage> qwen = tool_use_opening(ChatFormat::kChatML, "Be brief.", "Hi", tools);
  ASSERT_EQ(qwen.size(), 2u);
  EXPECT_EQ(qwen[0].content, qwen_tools_system(std::string("Be brief."), tools));
  EXPECT_EQ(qwen[1].content, "Hi");
  EXPECT_EQ(tool_result_role(ChatFormat::kLlama3), "ipython");
  EXPECT_EQ(tool_result_role(ChatFormat::kQwen2), "tool");
}
