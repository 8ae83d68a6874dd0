// `spade serve` end to end (issue 20): the real binary on a tiny random checkpoint written by the test.
//
// Expected replies are computed in this process, without the server: the checkpoint loaded through the
// library, the prompt rendered by ChatTemplate::render (chat) or Tokenizer::encode (completions), one
// rollout::generate() call per request with the request's sampling, seed and max tokens, and the text
// decoded whole (a final stop token left out) -- what OpenAI's API returns for those tokens. Streamed
// replies must add up to the same text. The greedy reply is also compared with `spade generate
// --temperature 0` run as its own process.
//
// The checkpoint's config.json has no eos id, so /v1/completions never stops before max_tokens (chat still
// stops at the template's <|im_end|>): a streamed completion of 30000 tokens runs for many seconds unless
// the server drops it, which is how the disconnect tests know the row was freed.
#include <arpa/inet.h>
#include <curl/curl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <torch/torch.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/atomic_file.h"
#include "evaldual/model_client.h"
#include "policy/chat_formats.h"
#include "policy/chat_template.h"
#include "policy/checkpoint.h"
#include "policy/stop_tokens.h"
#include "policy/tokenizer.h"
#include "rollout/sampler.h"
#include "tests/testing/test_util.h"
#include "tests/testing/tiny_policy.h"
#include "tests/trainer/spawn_helpers.h"

using namespace spade;
using json = nlohmann::json;
using namespace std::chrono_literals;

namespace {

constexpr const char* kKey = "sekret-test-key";
constexpr const char* kKeyEnv = "SPADE_SERVE_TEST_KEY";

// ---- The checkpoint and the reference sampler --------------------------------------------------------

/// A random 2-layer decoder over the tiny SentencePiece tokenizer (ChatML), no eos id in config.json.
std::string write_checkpoint(const std::string& name) {
  const std::string dir = fixtures::fresh_test_dir("apps_serve", name);
  const policy::Tokenizer tok = policy::Tokenizer::load(fixtures::tiny_tokenizer_path());
  policy::ModelConfig c;
  c.vocab_size = tok.vocab_size();
  c.hidden_size = 64;
  c.intermediate_size = 128;
  c.num_hidden_layers = 2;
  c.num_attention_heads = 4;
  c.num_key_value_heads = 2;
  c.head_dim = 16;
  c.rope_theta = 10000;
  c.max_position_embeddings = 32768;  // room for streams long enough to still run when the test acts
  c.tie_word_embeddings = true;
  policy::Transformer m(c);
  m->init_weights(5, 0.02);
  policy::CheckpointSaveOptions so;
  so.tokenizer_model = fixtures::tiny_tokenizer_path();
  policy::save_checkpoint(dir, m, so);
  return dir;
}

/// The checkpoint loaded through the library: what each request should return.
struct Reference {
  policy::Tokenizer tok;
  std::unique_ptr<policy::ChatTemplate> chat;
  policy::Transformer model{nullptr};

  explicit Reference(const std::string& dir)
      : tok(policy::Tokenizer::load_dir(dir)),
        chat(std::make_unique<policy::ChatTemplate>(policy::ChatTemplate::for_checkpoint(dir, tok))),
        model(policy::load_checkpoint(dir)) {}

  struct Reply {
    std::string text, finish_reason;
    size_t tokens = 0;
  };
  /// Replies to `prompt` sampled n times (choice c = generate(n copies of prompt, seed)[c]).
  std::vector<Reply> sample(const std::vector<int64_t>& prompt, double t, double top_p, int top_k, int max_tokens,
                            uint64_t seed, bool chat_stops, int n = 1) {
    rollout::SamplingParams p;
    p.temperature = t;
    p.top_p = top_p;
    p.top_k = top_k;
    p.max_new_tokens = max_tokens;
    p.stop_token_ids = policy::stop_token_ids(model->config(), chat_stops ? chat.get() : nullptr);
    std::vector<Reply> out;
    for (rollout::GenerationResult& r : rollout::generate(model, std::vector<std::vector<int64_t>>(n, prompt), p, seed, n)) {
      const bool stop = r.finish_reason == rollout::FinishReason::kStop;
      Reply reply{"", stop ? "stop" : "length", r.tokens.size()};
      if (stop) r.tokens.pop_back();  // the end-of-turn token is not text
      reply.text = tok.decode(r.tokens);
      out.push_back(reply);
    }
    return out;
  }
  std::vector<Reply> chat_reply(const std::string& user, double t, double top_p, int top_k, int max_tokens, uint64_t seed,
                                int n = 1, const std::vector<nlohmann::ordered_json>& tools = {}) {
    std::vector<policy::ChatMessage> msgs;
    if (!tools.empty()) msgs.push_back({"system", policy::qwen_tools_system(std::nullopt, tools)});  // Qwen3's tools turn
    msgs.push_back({"user", user});
    return sample(chat->render(msgs, true), t, top_p, top_k, max_tokens, seed, true, n);
  }
  std::vector<Reply> completion_reply(const std::string& prompt, double t, int max_tokens, uint64_t seed, int n) {
    return sample(tok.encode(prompt), t, 1.0, 0, max_tokens, seed, false, n);
  }
};

// ---- The server process ------------------------------------------------------------------------------

struct ServeProcess {
  pid_t pid = -1;
  int port = 0;
  std::string log;

  ServeProcess(const std::string& checkpoint, const std::vector<std::string>& extra, const std::string& log_path)
      : log(log_path) {
    std::vector<std::string> args = {SPADE_BIN, "serve", "--checkpoint", checkpoint, "--port", "0", "--model-name", "tiny",
                                     "--api-key", kKey};
    args.insert(args.end(), extra.begin(), extra.end());
    std::filesystem::remove(log);
    pid = testutil::spawn_logged(args, log);
    const std::string mark = "listening on http://127.0.0.1:";
    for (int i = 0; i < 1200 && port == 0; ++i) {
      const std::string text = std::filesystem::exists(log) ? read_file(log) : "";
      const size_t at = text.find(mark);
      if (at != std::string::npos) port = std::stoi(text.substr(at + mark.size()));
      else if (waitpid(pid, nullptr, WNOHANG) == pid) break;
      else std::this_thread::sleep_for(100ms);
    }
  }
  ~ServeProcess() {
    if (pid > 0 && waitpid(pid, nullptr, WNOHANG) == 0) {
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
    }
  }
  std::string url(const std::string& path) const { return "http://127.0.0.1:" + std::to_string(port) + path; }
  /// Waits up to `seconds` for the process to exit; its exit code, or -1 if it has not exited.
  int wait_exit(int seconds) {
    for (int i = 0; i < seconds * 20; ++i) {
      int status = 0;
      if (waitpid(pid, &status, WNOHANG) == pid) {
        pid = -1;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
      std::this_thread::sleep_for(50ms);
    }
    return -1;
  }
};

// ---- Plain HTTP clients (libcurl; a raw socket for the client that disconnects) -----------------------

struct HttpReply {
  long status = 0;
  std::string body;
};

size_t collect(char* data, size_t size, size_t n, void* user) {
  auto* f = static_cast<std::function<void(const char*, size_t)>*>(user);
  (*f)(data, size * n);
  return size * n;
}

/// One request; `on_data` sees the body as it arrives.
HttpReply http(const std::string& method, const std::string& url, const std::string& body, bool with_key = true,
               const std::function<void(const std::string&)>& on_data = {}) {
  HttpReply r;
  std::function<void(const char*, size_t)> sink = [&](const char* d, size_t n) {
    r.body.append(d, n);
    if (on_data) on_data(r.body);
  };
  CURL* h = curl_easy_init();
  curl_slist* headers = curl_slist_append(nullptr, "Content-Type: application/json");
  if (with_key) headers = curl_slist_append(headers, (std::string("Authorization: Bearer ") + kKey).c_str());
  curl_easy_setopt(h, CURLOPT_URL, url.c_str());
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method.c_str());
  if (method == "POST") {
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, body.data());
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
  }
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, collect);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &sink);
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_TIMEOUT, 300L);
  if (curl_easy_perform(h) == CURLE_OK) curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &r.status);
  curl_slist_free_all(headers);
  curl_easy_cleanup(h);
  return r;
}

/// The events of a server-sent-events body, split at blank lines: each "data: " payload, in order.
std::vector<std::string> sse_payloads(const std::string& body) {
  std::vector<std::string> out;
  size_t at = 0;
  while (at < body.size()) {
    const size_t end = body.find("\n\n", at);
    const std::string event = body.substr(at, end == std::string::npos ? std::string::npos : end - at);
    if (event.rfind("data: ", 0) == 0) out.push_back(event.substr(6));
    else out.push_back("<not an event: " + event + ">");
    if (end == std::string::npos) break;
    at = end + 2;
  }
  return out;
}

/// The content per choice index of a streamed chat reply (the events before the final [DONE]).
std::vector<std::string> streamed_chat_content(const std::vector<std::string>& events) {
  std::vector<std::string> content;
  for (size_t i = 0; i + 1 < events.size(); ++i) {
    const json chunk = json::parse(events[i]);
    for (const json& c : chunk["choices"]) {
      const size_t k = c["index"];
      if (content.size() <= k) content.resize(k + 1);
      if (c["delta"].contains("content") && c["delta"]["content"].is_string()) content[k] += c["delta"]["content"].get<std::string>();
    }
  }
  return content;
}

/// A streaming request over a raw socket, so that the test decides when the client hangs up.
class RawStream {
 public:
  RawStream(int port, const std::string& path, const std::string& body) : fd_(socket(AF_INET, SOCK_STREAM, 0)) {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
    if (connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) return;
    const std::string req = "POST " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " + kKey +
                            "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
                            "\r\n\r\n" + body;
    (void)!send(fd_, req.data(), req.size(), MSG_NOSIGNAL);
  }
  ~RawStream() { hang_up(); }
  /// Reads until `events` server-sent events have arrived (or 60 s pass); returns the bytes read so far.
  size_t wait_events(size_t events) {
    char buf[4096];
    for (size_t seen = 0; seen < events;) {
      pollfd p{fd_, POLLIN, 0};
      if (poll(&p, 1, 60000) <= 0) break;
      const ssize_t n = recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) break;
      got_.append(buf, n);
      seen = 0;
      for (size_t at = got_.find("data: "); at != std::string::npos; at = got_.find("data: ", at + 1)) ++seen;
    }
    return got_.size();
  }
  /// Closes the connection mid-stream.
  void hang_up() {
    if (fd_ >= 0) close(fd_);
    fd_ = -1;
  }

 private:
  int fd_;
  std::string got_;
};

json health(const ServeProcess& s) { return json::parse(http("GET", s.url("/health"), "", false).body); }

// ---- The official OpenAI Node SDK ---------------------------------------------------------------------

/// The OpenAI Node SDK this test was written against.
constexpr char kOpenaiNpmPackage[] = "openai@6.49.0";

/// Installs kOpenaiNpmPackage (once) under SPADE_TEST_TMP/openai_node and copies the client script there.
/// Returns "" when ready, else why the Node clients cannot run.
std::string prepare_node_sdk(std::string* dir) {
  *dir = std::string(SPADE_TEST_TMP) + "/openai_node";
  if (std::system("command -v node >/dev/null 2>&1") != 0) return "node is not installed (Debian package nodejs)";
  std::filesystem::create_directories(*dir);
  std::filesystem::copy_file(std::string(SPADE_SOURCE_DIR) + "/tests/apps/serve_openai_client.mjs",
                             *dir + "/serve_openai_client.mjs", std::filesystem::copy_options::overwrite_existing);
  if (std::filesystem::exists(*dir + "/node_modules/openai/package.json")) return "";
  if (std::system("command -v npm >/dev/null 2>&1") != 0) return "npm is not installed (Debian package npm)";
  if (!std::filesystem::exists(*dir + "/package.json"))
    write_file_atomic(*dir + "/package.json", "{\"name\": \"spade-serve-test\", \"private\": true}\n");
  const fixtures::CommandResult r =
      fixtures::run_command("cd '" + *dir + "' && npm install " + kOpenaiNpmPackage +
                            " --no-audit --no-fund --loglevel=error 2>&1");
  if (r.rc != 0 || !std::filesystem::exists(*dir + "/node_modules/openai/package.json"))
    return std::string("`npm install ") + kOpenaiNpmPackage +
           "` failed (is the npm registry reachable?): " + r.out.substr(0, 600);
  return "";
}

}  // namespace

// 21 clients at once against one server with 8 rows: 8 through the OpenAI Node SDK (chat, streamed chat,
// n = 2 streamed with usage, completions with n = 2 plain and streamed, a tools request, the model list,
// an unknown model), 6 through evaldual's libcurl ChatClient, one with ignore_eos and one streamed chat
// read with plain libcurl, a malformed body, an out-of-range field, a missing API key, an oversized body,
// and a client that disconnects mid-stream. Every reply equals the reference (or is the right OpenAI error), the dropped
// stream is ended by the server (aborted, its row free), and the server goes on serving: afterwards its
// greedy reply equals `spade generate --temperature 0`.
TEST(Serve, ConcurrentClientsNodeSdkLibcurlErrorsAndADisconnect) {
  const std::string ckpt = write_checkpoint("concurrent");
  ServeProcess server(ckpt, {"--max-batch", "8", "--max-request-bytes", "65536"},
                      fixtures::fresh_test_dir("apps_serve", "concurrent_log") + "/serve.log");
  ASSERT_GT(server.port, 0) << read_file(server.log);
  Reference ref(ckpt);
  setenv(kKeyEnv, kKey, 1);

  std::string node_dir;
  const std::string node_missing = prepare_node_sdk(&node_dir);
  const json tool = {{"type", "function"},
                     {"function", {{"name", "get_time"}, {"parameters", {{"type", "object"}, {"properties", json::object()}}}}}};
  const json node_calls = json::array({
      {{"name", "chat"}, {"kind", "chat"},
       {"body", {{"model", "tiny"}, {"messages", {{{"role", "user"}, {"content", "Tell me about gcd."}}}},
                 {"temperature", 0.9}, {"top_p", 0.95}, {"seed", 101}, {"max_tokens", 40}}}},
      {{"name", "chat_stream"}, {"kind", "chat_stream"},
       {"body", {{"model", "tiny"}, {"messages", {{{"role", "user"}, {"content", "Tell me about gcd."}}}},
                 {"temperature", 0.9}, {"top_p", 0.95}, {"seed", 101}, {"max_tokens", 40}}}},
      {{"name", "chat_n2_stream"}, {"kind", "chat_stream"},
       {"body", {{"model", "tiny"}, {"messages", {{{"role", "user"}, {"content", "Two answers."}}}}, {"n", 2},
                 {"seed", 102}, {"max_tokens", 25}, {"stream_options", {{"include_usage", true}}}}}},
      {{"name", "completion"}, {"kind", "completion"},
       {"body", {{"model", "tiny"}, {"prompt", "def step(self, action):"}, {"n", 2}, {"seed", 103}, {"max_tokens", 30}}}},
      {{"name", "completion_stream"}, {"kind", "completion_stream"},
       {"body", {{"model", "tiny"}, {"prompt", "def step(self, action):"}, {"n", 2}, {"seed", 103}, {"max_tokens", 30}}}},
      {{"name", "tools"}, {"kind", "chat"},
       {"body", {{"model", "tiny"}, {"messages", {{{"role", "user"}, {"content", "What time is it?"}}}},
                 {"tools", {tool}}, {"temperature", 0}, {"max_tokens", 20}}}},
      {{"name", "models"}, {"kind", "models"}, {"body", nullptr}},
      {{"name", "unknown_model"}, {"kind", "error"},
       {"body", {{"model", "gpt-9"}, {"messages", {{{"role", "user"}, {"content", "hi"}}}}}}},
  });

  std::vector<std::thread> clients;
  json node_results;
  std::string node_log;
  if (node_missing.empty()) {
    const std::string config_path = node_dir + "/calls.json";
    write_file_atomic(config_path, json{{"baseURL", server.url("/v1")}, {"apiKey", kKey}, {"calls", node_calls}}.dump());
    clients.emplace_back([&, config_path] {
      const fixtures::CommandResult r = fixtures::run_command("cd '" + node_dir + "' && node serve_openai_client.mjs '" +
                                                              config_path + "' 2>'" + node_dir + "/node.log'");
      node_log = r.out + read_file(node_dir + "/node.log");
      if (r.rc == 0) node_results = json::parse(r.out, nullptr, false);
    });
  }

  // evaldual's libcurl client: 6 chats, greedy and sampled.
  std::vector<std::string> curl_content(6), curl_finish(6);
  std::vector<std::string> curl_errors(6);
  for (int i = 0; i < 6; ++i)
    clients.emplace_back([&, i] {
      evaldual::ModelEndpoint ep;
      ep.name = "serve-test";
      ep.base_url = server.url("/v1");
      ep.model = "tiny";
      ep.api_key_env = kKeyEnv;
      ep.temperature = i % 2 == 0 ? 0.0 : 0.7;
      ep.max_tokens = 20 + i;
      ep.max_retries = 0;
      ep.extra_body = {{"seed", i + 1}, {"top_p", 1.0}};
      try {
        const evaldual::ChatReply r = evaldual::ChatClient(ep).complete({{"user", "Question " + std::to_string(i)}});
        curl_content[i] = r.content;
        curl_finish[i] = r.finish_reason;
      } catch (const std::exception& e) {
        curl_errors[i] = e.what();
      }
    });
  // vLLM's ignore_eos: exactly max_tokens tokens, past every end-of-turn.
  HttpReply ignore_eos;
  clients.emplace_back([&] {
    ignore_eos = http("POST", server.url("/v1/chat/completions"),
                      R"({"model": "tiny", "messages": [{"role": "user", "content": "Go on."}], "ignore_eos": true,
                          "seed": 7, "max_tokens": 30})");
  });
  // A streamed chat read with plain libcurl: our SSE framing, parsed here.
  HttpReply curl_stream;
  clients.emplace_back([&] {
    curl_stream = http("POST", server.url("/v1/chat/completions"),
                       R"({"model": "tiny", "messages": [{"role": "user", "content": "Question 1"}], "stream": true,
                           "temperature": 0.7, "top_p": 1.0, "seed": 2, "max_tokens": 21})");
  });
  // Bad requests, each answered with OpenAI's error object.
  HttpReply malformed, out_of_range, no_key, too_large;
  clients.emplace_back([&] {
    malformed = http("POST", server.url("/v1/chat/completions"), R"({"model": "tiny", "messages": [)");
  });
  clients.emplace_back([&] {
    out_of_range = http("POST", server.url("/v1/chat/completions"),
                        R"({"model": "tiny", "messages": [{"role": "user", "content": "hi"}], "temperature": 5})");
  });
  clients.emplace_back([&] {
    no_key = http("POST", server.url("/v1/chat/completions"), R"({"model": "tiny", "messages": []})", /*with_key=*/false);
  });
  clients.emplace_back([&] {
    too_large = http("POST", server.url("/v1/completions"),
                     R"({"model": "tiny", "prompt": ")" + std::string(70000, 'a') + R"("})");
  });
  // A client that reads two events of a 30000-token stream and hangs up.
  size_t disconnect_bytes = 0;
  clients.emplace_back([&] {
    RawStream s(server.port, "/v1/completions",
                R"({"model": "tiny", "prompt": "x", "max_tokens": 30000, "stream": true, "temperature": 1.0, "seed": 9})");
    disconnect_bytes = s.wait_events(2);
  });
  for (std::thread& t : clients) t.join();

  // libcurl clients: the reference replies.
  for (int i = 0; i < 6; ++i) {
    ASSERT_EQ(curl_errors[i], "") << "client " << i;
    const auto want = ref.chat_reply("Question " + std::to_string(i), i % 2 == 0 ? 0.0 : 0.7, 1.0, 0, 20 + i, i + 1)[0];
    EXPECT_EQ(curl_content[i], want.text) << "libcurl client " << i;
    EXPECT_EQ(curl_finish[i], want.finish_reason) << "libcurl client " << i;
  }
  ASSERT_EQ(ignore_eos.status, 200) << ignore_eos.body;
  const auto no_stop = ref.sample(ref.chat->render({{"user", "Go on."}}, true), 1.0, 1.0, 0, 30, 7, /*chat_stops=*/false)[0];
  EXPECT_EQ(json::parse(ignore_eos.body)["choices"][0]["message"]["content"], no_stop.text);
  EXPECT_EQ(json::parse(ignore_eos.body)["usage"]["completion_tokens"], 30);
  // The plain-libcurl stream: role first, content adding up to the non-streamed reply of the same
  // request (ChatClient client 1: seed 2, T 0.7, 21 tokens), a finish chunk, then [DONE].
  ASSERT_EQ(curl_stream.status, 200) << curl_stream.body;
  const std::vector<std::string> events = sse_payloads(curl_stream.body);
  ASSERT_GE(events.size(), 3u) << curl_stream.body;
  EXPECT_EQ(events.back(), "[DONE]");
  EXPECT_EQ(json::parse(events[0])["choices"][0]["delta"]["role"], "assistant");
  EXPECT_EQ(streamed_chat_content(events), std::vector<std::string>{curl_content[1]});
  EXPECT_EQ(json::parse(events[events.size() - 2])["choices"][0]["finish_reason"], curl_finish[1]);

  // Bad requests: status, and OpenAI's error object with the field named.
  auto error_of = [](const HttpReply& r) { return json::parse(r.body, nullptr, false); };
  EXPECT_EQ(malformed.status, 400);
  EXPECT_EQ(error_of(malformed)["error"]["type"], "invalid_request_error") << malformed.body;
  EXPECT_NE(error_of(malformed)["error"]["message"].get<std::string>().find("not valid JSON"), std::string::npos);
  EXPECT_EQ(out_of_range.status, 400);
  EXPECT_EQ(error_of(out_of_range)["error"]["param"], "temperature") << out_of_range.body;
  EXPECT_EQ(no_key.status, 401);
  EXPECT_EQ(error_of(no_key)["error"]["code"], "invalid_api_key") << no_key.body;
  EXPECT_EQ(too_large.status, 413);
  EXPECT_EQ(error_of(too_large)["error"]["code"], "request_too_large") << too_large.body;

  // The dropped stream: it had started, and the server ended it (aborted) long before its 30000 tokens.
  EXPECT_GT(disconnect_bytes, 0u);
  json h;
  for (int i = 0; i < 600; ++i) {
    h = health(server);
    if (h["running"] == 0 && h["aborted"] == 1) break;
    std::this_thread::sleep_for(50ms);
  }
  EXPECT_EQ(h["aborted"], 1) << h.dump();
  EXPECT_EQ(h["running"], 0) << h.dump();
  EXPECT_EQ(h["failed"], 0) << h.dump();
  EXPECT_EQ(h["status"], "ok");

  // Still serving: the greedy reply equals `spade generate --temperature 0` on the same prompt.
  evaldual::ModelEndpoint ep;
  ep.name = "serve-test";
  ep.base_url = server.url("/v1");
  ep.model = "tiny";
  ep.api_key_env = kKeyEnv;
  ep.temperature = 0.0;
  ep.max_tokens = 24;
  ep.max_retries = 0;
  const std::string greedy = evaldual::ChatClient(ep).complete({{"user", "Find gcd(12, 18)."}}).content;
  const fixtures::CommandResult cli = fixtures::run_command(
      std::string("OMP_WAIT_POLICY=PASSIVE ") + SPADE_BIN + " generate --checkpoint " + ckpt +
      " --chat --prompt 'Find gcd(12, 18).' --temperature 0 --max-new-tokens 24 2>/dev/null");
  ASSERT_EQ(cli.rc, 0);
  EXPECT_EQ(cli.out, greedy + "\n");
  EXPECT_EQ(greedy, ref.chat_reply("Find gcd(12, 18).", 0, 1.0, 0, 24, 0)[0].text);

  // The OpenAI Node SDK's clients.
  if (!node_missing.empty()) GTEST_SKIP() << "the OpenAI Node SDK part did not run: " << node_missing
                                          << " (every other client above passed)";
  ASSERT_TRUE(node_results.is_object()) << node_log;
  for (const auto& [name, r] : node_results.items()) EXPECT_FALSE(r.contains("thrown")) << name << ": " << r.dump();
  const auto chat = ref.chat_reply("Tell me about gcd.", 0.9, 0.95, 0, 40, 101)[0];
  EXPECT_EQ(node_results["chat"]["content"][0], chat.text);
  EXPECT_EQ(node_results["chat"]["finish_reason"][0], chat.finish_reason);
  EXPECT_EQ(node_results["chat"]["object"], "chat.completion");
  EXPECT_EQ(node_results["chat"]["usage"]["completion_tokens"], chat.tokens);
  // Streamed: the same text as the plain reply of the same request.
  EXPECT_EQ(node_results["chat_stream"]["content"][0], node_results["chat"]["content"][0]);
  EXPECT_EQ(node_results["chat_stream"]["finish_reason"][0], chat.finish_reason);
  EXPECT_EQ(node_results["chat_stream"]["roles"][0], "assistant");
  const auto two = ref.chat_reply("Two answers.", 1.0, 1.0, 0, 25, 102, 2);
  EXPECT_EQ(node_results["chat_n2_stream"]["content"][0], two[0].text);
  EXPECT_EQ(node_results["chat_n2_stream"]["content"][1], two[1].text);
  EXPECT_EQ(node_results["chat_n2_stream"]["usage"]["completion_tokens"], two[0].tokens + two[1].tokens);
  const auto completions = ref.completion_reply("def step(self, action):", 1.0, 30, 103, 2);
  for (int c = 0; c < 2; ++c) {
    EXPECT_EQ(node_results["completion"]["text"][c], completions[c].text) << "choice " << c;
    EXPECT_EQ(node_results["completion"]["finish_reason"][c], "length");  // no eos id: always the cap
    EXPECT_EQ(node_results["completion_stream"]["text"][c], completions[c].text) << "choice " << c;
  }
  const auto tools = ref.chat_reply("What time is it?", 0, 1.0, 0, 20, 0, 1, {tool});
  EXPECT_EQ(node_results["tools"]["content"][0], tools.front().text);
  EXPECT_EQ(node_results["models"]["ids"], json::array({"tiny"}));
  EXPECT_EQ(node_results["unknown_model"]["status"], 404);
  EXPECT_EQ(node_results["unknown_model"]["code"], "model_not_found");
  EXPECT_EQ(node_results["unknown_model"]["param"], "model");
}

// SIGTERM while an 8000-token stream is running: the stream is answered to its end ([DONE], usage 8000
// tokens), a request sent after the signal gets 503 with OpenAI's error object, and the process exits 0.
TEST(Serve, SigtermDrainsInFlightRequestsAndExitsZero) {
  const std::string ckpt = write_checkpoint("drain");
  ServeProcess server(ckpt, {}, fixtures::fresh_test_dir("apps_serve", "drain_log") + "/serve.log");
  ASSERT_GT(server.port, 0) << read_file(server.log);
  std::atomic<bool> started{false};
  HttpReply stream;
  std::chrono::steady_clock::time_point stream_end;
  std::thread reader([&] {
    stream = http("POST", server.url("/v1/completions"),
                  R"({"model": "tiny", "prompt": "x", "max_tokens": 8000, "stream": true, "seed": 4,
                      "stream_options": {"include_usage": true}})",
                  true, [&](const std::string& so_far) {
                    if (so_far.find("data: ") != std::string::npos) started = true;
                  });
    stream_end = std::chrono::steady_clock::now();
  });
  for (int i = 0; i < 6000 && !started; ++i) std::this_thread::sleep_for(10ms);
  ASSERT_TRUE(started);
  ASSERT_EQ(kill(server.pid, SIGTERM), 0);
  std::this_thread::sleep_for(50ms);  // the signal's watcher sets the server draining within microseconds
  const HttpReply refused = http("POST", server.url("/v1/completions"), R"({"model": "tiny", "prompt": "y"})");
  const auto refused_at = std::chrono::steady_clock::now();
  reader.join();
  EXPECT_LT(refused_at, stream_end) << "the stream had ended before the server was draining: nothing was in flight";
  const int rc = server.wait_exit(60);

  EXPECT_EQ(refused.status, 503) << refused.body;
  EXPECT_EQ(json::parse(refused.body, nullptr, false)["error"]["code"], "shutting_down") << refused.body;
  ASSERT_EQ(stream.status, 200);
  const std::vector<std::string> events = sse_payloads(stream.body);
  ASSERT_GE(events.size(), 3u);
  EXPECT_EQ(events.back(), "[DONE]");
  const json usage = json::parse(events[events.size() - 2]);
  EXPECT_EQ(usage["usage"]["completion_tokens"], 8000) << events[events.size() - 2];
  EXPECT_EQ(json::parse(events[events.size() - 3])["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(rc, 0) << read_file(server.log);
  EXPECT_NE(read_file(server.log).find("draining"), std::string::npos);
}

// --max-batch 1 --max-queue 1: a 30000-token stream holds the one row, a second request waits, a third is
// answered 429 with OpenAI's error object; when the stream's client hangs up, its row goes to the waiting
// request, which is answered.
TEST(Serve, AFullQueueAnswers429AndADisconnectFreesTheRow) {
  const std::string ckpt = write_checkpoint("queue");
  ServeProcess server(ckpt, {"--max-batch", "1", "--max-queue", "1"},
                      fixtures::fresh_test_dir("apps_serve", "queue_log") + "/serve.log");
  ASSERT_GT(server.port, 0) << read_file(server.log);
  RawStream holder(server.port, "/v1/completions", R"({"model": "tiny", "prompt": "x", "max_tokens": 30000, "stream": true})");
  ASSERT_GT(holder.wait_events(1), 0u);
  HttpReply waiting;
  std::thread waiter([&] {
    waiting = http("POST", server.url("/v1/completions"), R"({"model": "tiny", "prompt": "y", "max_tokens": 3})");
  });
  json h = json::object();
  for (int i = 0; i < 600 && h.value("waiting", 0) != 1; ++i) {
    std::this_thread::sleep_for(20ms);
    h = health(server);
  }
  EXPECT_EQ(h["waiting"], 1) << h.dump();
  EXPECT_EQ(h["running"], 1) << h.dump();
  const HttpReply refused = http("POST", server.url("/v1/completions"), R"({"model": "tiny", "prompt": "z", "max_tokens": 3})");
  EXPECT_EQ(refused.status, 429) << refused.body;
  const json e = json::parse(refused.body, nullptr, false);
  EXPECT_EQ(e["error"]["code"], "queue_full") << refused.body;
  EXPECT_EQ(e["error"]["type"], "rate_limit_error") << refused.body;
  holder.hang_up();
  waiter.join();
  EXPECT_EQ(waiting.status, 200) << waiting.body;
  EXPECT_EQ(json::parse(waiting.body)["usage"]["completion_tokens"], 3);
  EXPECT_EQ(health(server)["aborted"], 1);
}
