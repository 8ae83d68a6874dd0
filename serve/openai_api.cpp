#include "serve/openai_api.h"

#include <algorithm>
#include <chrono>
#include <mutex>
#include <random>

#include "serve/api_response.h"
#include "serve/chat_prompt.h"
#include "serve/choice_text.h"

namespace spade::serve {

using json = nlohmann::ordered_json;

std::string decode_lenient(const policy::Tokenizer& tok, const std::vector<int64_t>& ids) {
  try {
    return tok.decode(ids);
  } catch (const spade::Error&) {  // an id outside the tokenizer's vocabulary (or in a gap of it)
  }
  std::vector<int64_t> known;
  for (int64_t id : ids) try {
      tok.decode({id});
      known.push_back(id);
    } catch (const spade::Error&) {
    }
  return tok.decode(known);
}

namespace {

uint64_t random_u64() {
  static std::mutex mu;
  static std::mt19937_64 rng{std::random_device{}()};
  std::lock_guard<std::mutex> lk(mu);
  return rng();
}

std::string random_hex(int digits) {
  static const char* hex = "0123456789abcdef";
  std::string s;
  while (static_cast<int>(s.size()) < digits) {
    uint64_t x = random_u64();
    for (int i = 0; i < 16 && static_cast<int>(s.size()) < digits; ++i, x >>= 4) s += hex[x & 15];
  }
  return s;
}

/// Whether a finished choice's last token is a stop token (the sampler keeps it; its text is left out).
bool ends_with_stop_token(const ChoiceOutput& o) {
  return o.done && o.finish_reason == rollout::FinishReason::kStop && o.stop_string.empty() && !o.tokens.empty();
}

int64_t unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

/// A validated request, ready for the engine.
struct OpenAiApi::Prepared {
  bool chat = false;
  JobSpec spec;
  SamplingFields sampling;
  bool tool_calls = false, parallel_tool_calls = true;
};

/// One request in flight: its job, and what of its output has been turned into text and sent.
struct EventStream::State {
  const policy::Tokenizer* tok = nullptr;
  bool chat = false;
  std::string id, model;
  int64_t created = 0;
  int logprobs = -1;           // -1: none
  bool include_usage = false;
  int64_t prompt_tokens = 0;
  std::shared_ptr<Job> job;
  std::vector<ChoiceText> texts;
  std::vector<ChoiceOutput> out;  // what Job::read has copied so far
  std::vector<size_t> pushed;     // per choice: tokens handed to texts[c]
  std::vector<bool> closed;       // per choice: its last event has been built
  bool started = false, ended = false;

  TokenInfo token_info(size_t c, size_t i) const {
    TokenInfo t{decode_lenient(*tok, {out[c].tokens[i]}), out[c].logprobs[i], {}};
    if (i < out[c].top_logprobs.size())
      for (const rollout::TokenLogprob& a : out[c].top_logprobs[i]) t.top.push_back({decode_lenient(*tok, {a.token}), a.logprob});
    return t;
  }
  /// "logprobs" for tokens [from, to) of choice c (null without logprobs).
  json logprobs_json(size_t c, size_t from, size_t to, size_t text_offset) const {
    if (logprobs < 0) return nullptr;
    std::vector<TokenInfo> infos;
    for (size_t i = from; i < to; ++i) infos.push_back(token_info(c, i));
    return chat ? chat_logprobs(infos) : completion_logprobs(infos, logprobs > 0, text_offset);
  }
  /// Tokens of choice c that carry text: all but a final stop token.
  size_t text_tokens(size_t c) const { return out[c].tokens.size() - (ends_with_stop_token(out[c]) ? 1 : 0); }
  int64_t completion_tokens() const {
    int64_t n = 0;
    for (const ChoiceOutput& o : out) n += o.tokens.size();
    return n;
  }
  /// A stream event's object with `choices` (and "usage": null when the last event carries it).
  json chunk(const json& choices) const {
    json j = response_head(id, chat ? "chat.completion.chunk" : "text_completion", created, model);
    j["choices"] = choices;
    if (include_usage) j["usage"] = nullptr;
    return j;
  }
  /// Ends choice c's text (its final tokens) and returns the text that was left.
  std::string finish_text(size_t c) {
    const ChoiceOutput& o = out[c];
    const std::vector<int64_t> last(o.tokens.begin() + pushed[c], o.tokens.end());
    pushed[c] = o.tokens.size();
    return texts[c].finish(last, rollout::finish_reason_name(o.finish_reason), o.stop_string, ends_with_stop_token(o));
  }
};

EventStream::EventStream(std::unique_ptr<State> state) : s_(std::move(state)) {}
EventStream::~EventStream() {
  if (!s_->ended) s_->job->cancel();
}
bool EventStream::ended() const { return s_->ended; }
void EventStream::cancel() { s_->job->cancel(); }

std::string EventStream::next(std::chrono::milliseconds wait) {
  State& s = *s_;
  if (s.ended) return "";
  std::string events;
  if (!s.started && s.chat) {  // OpenAI's first chunk per choice: the role
    for (size_t c = 0; c < s.texts.size(); ++c)
      events += sse_event(s.chunk(json::array({chat_chunk_choice(static_cast<int>(c), {{"role", "assistant"}, {"content", ""}}, nullptr, "")})));
  }
  s.started = true;
  s.job->read(s.out, wait);
  const std::string error = s.job->error();
  if (!error.empty()) {  // an engine failure mid-stream: an error event, then the end
    events += sse_event(error_json(ApiError(500, error)));
    events += kSseDone;
    s.ended = true;
    return events;
  }
  bool all_closed = true;
  for (size_t c = 0; c < s.texts.size(); ++c) {
    if (s.closed[c]) continue;
    const ChoiceOutput& o = s.out[c];
    const size_t from = s.pushed[c];
    const size_t sent_before = s.texts[c].content().size();
    std::string text;
    if (!o.done) {
      text = s.texts[c].push(std::vector<int64_t>(o.tokens.begin() + from, o.tokens.end()));
      s.pushed[c] = o.tokens.size();
    } else {
      text = s.finish_text(c);
    }
    const size_t to = std::min(s.pushed[c], s.text_tokens(c));
    const json lp = to > from ? s.logprobs_json(c, from, to, sent_before) : json(nullptr);
    const int index = static_cast<int>(c);
    if (!text.empty() || !lp.is_null())
      events += sse_event(s.chunk(json::array({s.chat ? chat_chunk_choice(index, {{"content", text}}, lp, "")
                                                      : completion_choice(index, text, lp, "")})));
    if (!o.done) {
      all_closed = false;
      continue;
    }
    const ChoiceText& t = s.texts[c];
    if (!t.tool_calls().empty())
      events += sse_event(s.chunk(json::array({chat_chunk_choice(index, tool_calls_delta(t.tool_calls()), nullptr, "")})));
    events += sse_event(s.chunk(json::array({s.chat ? chat_chunk_choice(index, json::object(), nullptr, t.finish_reason())
                                                    : completion_choice(index, "", nullptr, t.finish_reason())})));
    s.closed[c] = true;
  }
  if (all_closed) {
    if (s.include_usage) {  // OpenAI's last chunk: no choices, the usage
      json j = s.chunk(json::array());
      j["usage"] = usage_json(s.prompt_tokens, s.completion_tokens());
      events += sse_event(j);
    }
    events += kSseDone;
    s.ended = true;
  }
  return events;
}

// ---- OpenAiApi ---------------------------------------------------------------------------------------

OpenAiApi::OpenAiApi(Engine& engine, const policy::Tokenizer& tokenizer, const policy::ChatTemplate* chat,
                     ServedModel model)
    : engine_(engine), tok_(tokenizer), chat_(chat), model_(std::move(model)) {}

json OpenAiApi::model(const std::string& id) const {
  if (id != model_.name)
    throw ApiError(404, "The model '" + id + "' does not exist; this server serves '" + model_.name + "'", "model",
                   "model_not_found");
  return {{"id", model_.name}, {"object", "model"}, {"created", model_.created}, {"owned_by", "spade"},
          {"max_model_len", model_.context_length}};
}

json OpenAiApi::models() const { return {{"object", "list"}, {"data", json::array({model(model_.name)})}}; }

namespace {

/// The job's sampling from the request's fields.
rollout::SamplingParams sampling_params(const SamplingFields& f, const std::vector<int64_t>& stop_ids) {
  rollout::SamplingParams p;
  p.temperature = f.temperature;
  p.top_p = f.top_p;
  p.top_k = f.top_k;
  p.min_p = f.min_p;
  if (!f.ignore_eos) p.stop_token_ids = stop_ids;
  p.stop_strings = f.stop;
  p.top_logprobs = std::max(0, f.logprobs);
  return p;
}

}  // namespace

OpenAiApi::Answer OpenAiApi::chat_completions(const std::string& body) {
  ChatRequest r = parse_chat_request(body);
  model(r.model);  // 404 for another model
  Prepared p;
  p.chat = true;
  if (!chat_) throw ApiError(400, "this checkpoint has no chat template (" + model_.no_chat + "); use /v1/completions", "messages");
  p.spec.prompts = {chat_prompt_ids(*chat_, r.messages, r.tools)};
  p.spec.params = sampling_params(r.sampling, model_.chat_stop_ids);
  p.sampling = r.sampling;
  p.tool_calls = r.tool_calls_enabled;
  p.parallel_tool_calls = r.parallel_tool_calls;
  return run(std::move(p));
}

OpenAiApi::Answer OpenAiApi::completions(const std::string& body) {
  CompletionRequest r = parse_completion_request(body);
  model(r.model);
  Prepared p;
  for (size_t i = 0; i < r.prompts.size(); ++i) {
    const CompletionPrompt& cp = r.prompts[i];
    std::vector<int64_t> ids = cp.is_ids ? cp.ids : tok_.encode(cp.text);
    if (ids.empty()) throw ApiError(400, "prompt " + std::to_string(i) + " is empty (it encodes to no tokens)", "prompt");
    for (int64_t id : ids)
      if (id >= model_.vocab_size)
        throw ApiError(400, "prompt " + std::to_string(i) + " has token id " + std::to_string(id) +
                                ", outside the model's vocabulary [0, " + std::to_string(model_.vocab_size) + ")",
                       "prompt");
    p.spec.prompts.push_back(std::move(ids));
  }
  p.spec.params = sampling_params(r.sampling, model_.text_stop_ids);
  p.sampling = r.sampling;
  return run(std::move(p));
}

OpenAiApi::Answer OpenAiApi::run(Prepared p) {
  const SamplingFields& f = p.sampling;
  size_t longest = 0;
  int64_t prompt_tokens = 0;
  for (const auto& ids : p.spec.prompts) {
    longest = std::max(longest, ids.size());
    prompt_tokens += static_cast<int64_t>(ids.size());
  }
  const int64_t room = model_.context_length - static_cast<int64_t>(longest);
  const char* field = p.chat ? "messages" : "prompt";
  if (room < 1)
    throw ApiError(400, "This model's maximum context length is " + std::to_string(model_.context_length) +
                            " tokens; the prompt has " + std::to_string(longest) + ", leaving no room to generate",
                   field, "context_length_exceeded");
  const int64_t max_tokens = f.max_tokens.value_or(room);
  if (max_tokens > room)
    throw ApiError(400, "This model's maximum context length is " + std::to_string(model_.context_length) +
                            " tokens. However, you requested " + std::to_string(longest + max_tokens) + " tokens (" +
                            std::to_string(longest) + " in the " + field + ", " + std::to_string(max_tokens) +
                            " in the completion). Please reduce the length of the " + field + " or completion.",
                   "max_tokens", "context_length_exceeded");
  p.spec.params.max_new_tokens = static_cast<int>(max_tokens);
  p.spec.n = f.n;
  p.spec.seed = f.seed ? *f.seed : random_u64();

  std::shared_ptr<Job> job;
  try {
    job = engine_.submit(std::move(p.spec));
  } catch (const QueueFull& e) {
    throw ApiError(429, e.what(), "", "queue_full", "rate_limit_error");
  } catch (const EngineStopping& e) {
    throw ApiError(503, e.what(), "", "shutting_down");
  }

  auto s = std::make_unique<EventStream::State>();
  s->tok = &tok_;
  s->chat = p.chat;
  s->id = (p.chat ? "chatcmpl-" : "cmpl-") + random_hex(24);
  s->model = model_.name;
  s->created = unix_now();
  s->logprobs = f.logprobs;
  s->include_usage = f.include_usage;
  s->prompt_tokens = prompt_tokens;
  s->job = job;
  const policy::Tokenizer* tok = &tok_;
  for (size_t c = 0; c < job->choices(); ++c)
    s->texts.emplace_back([tok](const std::vector<int64_t>& ids) { return decode_lenient(*tok, ids); }, f.stop,
                          p.tool_calls, p.parallel_tool_calls, s->id.substr(s->id.find('-') + 1) + "_" + std::to_string(c) + "_");
  s->pushed.assign(job->choices(), 0);
  s->closed.assign(job->choices(), false);
  Answer a;
  if (f.stream) {
    a.stream = std::make_unique<EventStream>(std::move(s));
    return a;
  }

  // A whole reply: wait for every choice, then one body.
  struct CancelOnExit {  // if building the reply throws, the job's rows leave the batch
    Job& job;
    ~CancelOnExit() { job.cancel(); }
  } cancel_on_exit{*job};
  EventStream::State& st = *s;
  while (!job->wait_end(std::chrono::milliseconds(1000))) {
  }
  job->read(st.out, std::chrono::milliseconds(0));
  if (!job->error().empty()) throw ApiError(500, job->error());
  json reply = response_head(st.id, p.chat ? "chat.completion" : "text_completion", st.created, st.model);
  reply["choices"] = json::array();
  for (size_t c = 0; c < job->choices(); ++c) {
    const std::string text = st.finish_text(c);
    const json lp = st.logprobs_json(c, 0, st.text_tokens(c), 0);
    const ChoiceText& t = st.texts[c];
    reply["choices"].push_back(p.chat ? chat_choice(static_cast<int>(c), t.content(), t.tool_calls(), lp, t.finish_reason())
                                      : completion_choice(static_cast<int>(c), t.content(), lp, t.finish_reason()));
  }
  reply["usage"] = usage_json(prompt_tokens, st.completion_tokens());
  a.body = dump_json(reply);
  return a;
}

}  // namespace spade::serve
