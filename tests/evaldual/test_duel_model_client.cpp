// The OpenAI-compatible model client against a real local HTTP server (tests/evaldual/
// fake_openai_server.py, started per test on a free port): usage and cost, retries on 429/5xx with
// Retry-After, no retry on 400, timeouts, malformed bodies, the Bearer key, request-body fields, the
// rate limiter, the endpoints file, and a harness session played by a ModelAgent.
//
// Expected numbers are computed by hand from the server script's fixed replies: every completion
// reports 120 prompt + 30 completion tokens (total 150); "okcost" reports usage.cost 0.0123.
#include <gtest/gtest.h>

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "common/atomic_file.h"
#include "common/error.h"
#include "evaldual/harness.h"
#include "evaldual/model_agent.h"
#include "evaldual/model_client.h"
#include "evaldual/model_endpoints.h"
#include "evaldual/rate_limiter.h"
#include "tests/evaldual/duel_test_util.h"

extern char** environ;

namespace fs = std::filesystem;
using nlohmann::json;
using namespace spade::evaldual;
using spade::evaldual::testing::fresh_dir;

namespace {

constexpr const char* kKey = "sk-test-key-123";

class ModelClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fresh_dir("fake_openai");
    log_ = dir_ + "/requests.jsonl";
    std::string port_file = dir_ + "/port";
    std::string script = std::string(SPADE_SOURCE_DIR) + "/tests/evaldual/fake_openai_server.py";
    std::vector<std::string> args = {"python3", script, port_file, log_, kKey};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    ASSERT_EQ(posix_spawnp(&pid_, "python3", nullptr, nullptr, argv.data(), environ), 0);
    for (int i = 0; i < 200 && !fs::exists(port_file); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    ASSERT_TRUE(fs::exists(port_file)) << "the fake server did not start within 10 s";
    base_url_ = "http://127.0.0.1:" + spade::read_file(port_file) + "/v1";
  }
  void TearDown() override {
    if (pid_ > 0) {
      kill(pid_, SIGTERM);
      waitpid(pid_, nullptr, 0);
    }
  }

  // An endpoint on the fake server playing `scenario`, with fast backoff and no key.
  ModelEndpoint endpoint(const std::string& scenario) const {
    ModelEndpoint e;
    e.name = scenario;
    e.base_url = base_url_;
    e.model = scenario + "/" + ::testing::UnitTest::GetInstance()->current_test_info()->name();
    e.api_key_env = "";
    e.max_tokens = 256;
    e.temperature = 0.5;
    e.backoff_base_s = 0.01;
    e.backoff_cap_s = 5;
    e.max_retries = 3;
    e.timeout_s = 20;
    return e;
  }

  // The requests the server has logged, in order.
  std::vector<json> requests() const {
    std::vector<json> out;
    if (!fs::exists(log_)) return out;
    std::ifstream in(log_);
    for (std::string line; std::getline(in, line);)
      if (!line.empty()) out.push_back(json::parse(line));
    return out;
  }

  std::string thrown(ChatClient& c) const {
    try {
      c.complete(msgs());
    } catch (const spade::Error& e) {
      return e.what();
    }
    return "";
  }

  static std::vector<Message> msgs() { return {{"system", "be brief"}, {"user", "hi"}}; }

  std::string dir_, log_, base_url_;
  pid_t pid_ = -1;
};

TEST_F(ModelClientTest, SuccessReportsUsageAndPriceCost) {
  ModelEndpoint e = endpoint("ok");
  e.price_input_per_m = 2.5;
  e.price_output_per_m = 10.0;
  ChatClient c(e);
  ChatReply r = c.complete(msgs());
  EXPECT_EQ(r.content, "reply 2");  // the server answers with the number of messages it got
  EXPECT_EQ(r.finish_reason, "stop");
  EXPECT_EQ(r.usage.prompt_tokens, 120);
  EXPECT_EQ(r.usage.completion_tokens, 30);
  EXPECT_EQ(r.usage.total_tokens, 150);
  EXPECT_TRUE(r.usage.usage_reported);
  EXPECT_FALSE(r.usage.cost_reported);
  // By hand: 120 x 2.5 / 1e6 + 30 x 10 / 1e6 = 0.0003 + 0.0003 USD.
  EXPECT_NEAR(r.usage.cost_usd, 0.0006, 1e-12);
  EXPECT_EQ(r.usage.retries, 0);
  EXPECT_GT(r.usage.latency_s, 0.0);
  c.complete(msgs());
  ChatTotals t = c.totals();
  EXPECT_EQ(t.calls, 2);
  EXPECT_EQ(t.attempts, 2);
  EXPECT_EQ(t.prompt_tokens, 240);
  EXPECT_EQ(t.completion_tokens, 60);
  EXPECT_NEAR(t.cost_usd, 0.0012, 1e-12);
  auto req = requests();
  ASSERT_EQ(req.size(), 2u);
  EXPECT_EQ(req[0]["path"], "/v1/chat/completions");
  EXPECT_EQ(req[0]["authorization"], "");  // api_key_env "": no header
  EXPECT_EQ(req[0]["body"]["model"], e.model);
  EXPECT_EQ(req[0]["body"]["max_tokens"], 256);
  EXPECT_DOUBLE_EQ(req[0]["body"]["temperature"].get<double>(), 0.5);
  EXPECT_EQ(req[0]["body"]["messages"][1], json({{"role", "user"}, {"content", "hi"}}));
  EXPECT_FALSE(req[0]["body"].contains("reasoning_effort"));  // empty effort: not sent
}

TEST_F(ModelClientTest, ReportedCostWinsAndMissingUsageIsZero) {
  ModelEndpoint e = endpoint("okcost");
  e.price_input_per_m = 2.5;
  ChatClient c(e);
  ChatReply r = c.complete(msgs());
  EXPECT_TRUE(r.usage.cost_reported);
  EXPECT_DOUBLE_EQ(r.usage.cost_usd, 0.0123);  // the server's usage.cost, not 120 x 2.5 / 1e6
  ChatClient n(endpoint("nousage"));
  ChatReply q = n.complete(msgs());
  EXPECT_FALSE(q.usage.usage_reported);
  EXPECT_EQ(q.usage.total_tokens, 0);
  EXPECT_EQ(q.usage.cost_usd, 0.0);
}

TEST_F(ModelClientTest, Retries429HonouringRetryAfter) {
  ChatClient c(endpoint("retry429-2"));  // two 429s with Retry-After: 1, then success
  ChatReply r = c.complete(msgs());
  EXPECT_EQ(r.content, "reply 2");
  EXPECT_EQ(r.usage.retries, 2);
  auto req = requests();
  ASSERT_EQ(req.size(), 3u);
  // Backoff alone would wait <= 0.01 and 0.02 s (base 0.01); Retry-After asks for 1 s each time.
  EXPECT_GE(req[1]["t"].get<double>() - req[0]["t"].get<double>(), 0.9);
  EXPECT_GE(req[2]["t"].get<double>() - req[1]["t"].get<double>(), 0.9);
  EXPECT_EQ(c.totals().retries, 2);
  EXPECT_EQ(c.totals().attempts, 3);
}

TEST_F(ModelClientTest, Retries500ThenSucceeds) {
  ChatClient c(endpoint("retry500-1"));
  ChatReply r = c.complete(msgs());
  EXPECT_EQ(r.usage.retries, 1);
  EXPECT_EQ(requests().size(), 2u);
}

TEST_F(ModelClientTest, ExhaustedRetriesNameTheStatus) {
  ModelEndpoint e = endpoint("always500");
  e.max_retries = 2;
  ChatClient c(e);
  std::string err = thrown(c);
  EXPECT_NE(err.find("HTTP 500"), std::string::npos) << err;
  EXPECT_NE(err.find("upstream exploded"), std::string::npos) << err;
  EXPECT_NE(err.find("3 attempts"), std::string::npos) << err;
  EXPECT_NE(err.find(base_url_ + "/chat/completions"), std::string::npos) << err;
  EXPECT_EQ(requests().size(), 3u);  // first attempt + 2 retries
  EXPECT_EQ(c.totals().failed_calls, 1);
  EXPECT_EQ(c.totals().calls, 0);
}

TEST_F(ModelClientTest, ClientErrorIsNotRetried) {
  ChatClient c(endpoint("bad400"));
  std::string err = thrown(c);
  EXPECT_NE(err.find("HTTP 400"), std::string::npos) << err;
  EXPECT_NE(err.find("max_tokens is too large"), std::string::npos) << err;
  EXPECT_NE(err.find("not retried"), std::string::npos) << err;
  EXPECT_EQ(requests().size(), 1u);
}

TEST_F(ModelClientTest, SlowReplyTimesOutAndIsRetried) {
  ModelEndpoint e = endpoint("slow-5");
  e.timeout_s = 0.5;
  e.max_retries = 1;
  ChatClient c(e);
  auto t0 = std::chrono::steady_clock::now();
  std::string err = thrown(c);
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_NE(err.find("timed out"), std::string::npos) << err;
  EXPECT_NE(err.find("2 attempts"), std::string::npos) << err;
  EXPECT_EQ(requests().size(), 2u);
  EXPECT_LT(s, 4.9);  // two 0.5 s attempts, not one 5 s reply (generous bound)
}

TEST_F(ModelClientTest, MalformedBodiesGiveClearErrors) {
  ChatClient m(endpoint("malformed"));
  std::string err = thrown(m);
  EXPECT_NE(err.find("not a JSON object"), std::string::npos) << err;
  EXPECT_NE(err.find("{this is not json"), std::string::npos) << err;
  ChatClient n(endpoint("nochoices"));
  err = thrown(n);
  EXPECT_NE(err.find("no choices[0].message"), std::string::npos) << err;
  EXPECT_EQ(requests().size(), 2u);  // neither retried
}

TEST_F(ModelClientTest, ApiKeyIsSentAsBearerAndNeverShown) {
  ModelEndpoint e = endpoint("auth");
  e.api_key_env = "SPADE_TEST_MODEL_KEY";
  setenv("SPADE_TEST_MODEL_KEY", kKey, 1);
  ChatClient good(e);
  EXPECT_EQ(good.complete(msgs()).content, "reply 2");
  EXPECT_EQ(requests().back()["authorization"], std::string("Bearer ") + kKey);
  // A wrong key: the server echoes it in its 401 message; the error must not show it.
  setenv("SPADE_TEST_MODEL_KEY", "sk-wrong-key-456", 1);
  ChatClient bad(e);
  std::string err = thrown(bad);
  EXPECT_NE(err.find("HTTP 401"), std::string::npos) << err;
  EXPECT_NE(err.find("Incorrect API key provided: ***"), std::string::npos) << err;
  EXPECT_EQ(err.find("sk-wrong-key-456"), std::string::npos) << err;
  // An unset variable fails at construction, naming the variable.
  unsetenv("SPADE_TEST_MODEL_KEY");
  try {
    ChatClient none(e);
    FAIL() << "expected spade::Error";
  } catch (const spade::Error& x) {
    EXPECT_NE(std::string(x.what()).find("SPADE_TEST_MODEL_KEY"), std::string::npos) << x.what();
  }
}

TEST_F(ModelClientTest, EffortAndProviderFieldsReachTheBody) {
  ModelEndpoint e = endpoint("ok");
  e.reasoning_effort = "high";
  e.extra_body = {{"provider", {{"order", {"deepinfra"}}, {"allow_fallbacks", false}}}, {"top_p", 0.9}};
  ChatClient c(e);
  c.complete(msgs());
  json body = requests().at(0)["body"];
  EXPECT_EQ(body["reasoning_effort"], "high");
  EXPECT_EQ(body["provider"], json({{"order", {"deepinfra"}}, {"allow_fallbacks", false}}));
  EXPECT_DOUBLE_EQ(body["top_p"].get<double>(), 0.9);
  // OpenRouter's nested form, and extra_body overriding a built-in field (merge patch).
  e.effort_field = "reasoning.effort";
  e.extra_body = {{"max_tokens", 99}};
  json b2 = ChatClient(e).request_body(msgs());
  EXPECT_EQ(b2["reasoning"], json({{"effort", "high"}}));
  EXPECT_FALSE(b2.contains("reasoning_effort"));
  EXPECT_EQ(b2["max_tokens"], 99);
}

TEST(TokenBucket, ArithmeticByHand) {
  // 60 rpm = 1 token/s, burst 2, full at t=0: two free requests, then waits of 1 s and 2 s; by t=10
  // the bucket (at -2 tokens) has refilled to its cap of 2 (-2 + 10 x 1, capped), so no wait.
  TokenBucket b(60, 2, 0.0);
  EXPECT_DOUBLE_EQ(b.reserve(0.0), 0.0);
  EXPECT_DOUBLE_EQ(b.reserve(0.0), 0.0);
  EXPECT_DOUBLE_EQ(b.reserve(0.0), 1.0);
  EXPECT_DOUBLE_EQ(b.reserve(0.0), 2.0);
  EXPECT_DOUBLE_EQ(b.reserve(10.0), 0.0);
  EXPECT_DOUBLE_EQ(b.reserve(10.0), 0.0);
  EXPECT_DOUBLE_EQ(b.reserve(10.5), 0.5);  // 0 tokens + 0.5 refilled -> -0.5 after taking one
  TokenBucket unlimited(0, 1, 0.0);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(unlimited.reserve(0.0), 0.0);
  EXPECT_THROW(TokenBucket(60, 0.5, 0.0), spade::Error);
}

TEST_F(ModelClientTest, RateLimitSpacesConcurrentCalls) {
  ModelEndpoint e = endpoint("ok");
  e.requests_per_minute = 120;  // 0.5 s apart, burst 1
  auto c = std::make_shared<ChatClient>(e);
  auto work = [&] {
    for (int i = 0; i < 2; ++i) c->complete(msgs());
  };
  std::thread t1(work), t2(work);
  t1.join();
  t2.join();
  auto req = requests();
  ASSERT_EQ(req.size(), 4u);
  // Four sends at >= 0.5 s spacing span >= 1.5 s; 0.2 s slack for arrival jitter at the server.
  EXPECT_GE(req[3]["t"].get<double>() - req[0]["t"].get<double>(), 1.3);
  EXPECT_EQ(c->totals().calls, 4);
}

TEST(ModelEndpoints, ParsesDefaultsProvidersAndResolvesParticipants) {
  std::string yaml = R"(
defaults:
  base_url: https://router.example/api/v1
  api_key_env: ROUTER_KEY
  requests_per_minute: 30
models:
  qwen:
    model: qwen/qwen3-8b
    temperature: 0.6
    reasoning_effort: medium
    effort_field: reasoning.effort
    extra_body: {usage: {include: true}, tag: "007"}
    providers:
      deepinfra: {provider: {order: [deepinfra], allow_fallbacks: false}}
    price_input_per_m: 0.05
    price_output_per_m: 0.25
  local:
    base_url: http://127.0.0.1:8000/v1
    api_key_env: ""
    model: tiny
    max_tokens: 1024
)";
  EndpointFile f = parse_endpoints(yaml, "endpoints.yaml");
  ASSERT_EQ(f.models.size(), 2u);
  ModelEndpoint q = resolve_endpoint(f, Participant::parse("qwen#mini-swe-agent#low#deepinfra"));
  EXPECT_EQ(q.name, "qwen#mini-swe-agent#low#deepinfra");
  EXPECT_EQ(q.base_url, "https://router.example/api/v1");  // from defaults
  EXPECT_EQ(q.api_key_env, "ROUTER_KEY");
  EXPECT_EQ(q.model, "qwen/qwen3-8b");
  EXPECT_EQ(q.reasoning_effort, "low");  // the participant's effort overrides the file's "medium"
  EXPECT_EQ(q.effort_field, "reasoning.effort");
  EXPECT_EQ(q.provider, "deepinfra");
  EXPECT_DOUBLE_EQ(*q.temperature, 0.6);
  EXPECT_DOUBLE_EQ(q.requests_per_minute, 30);
  EXPECT_DOUBLE_EQ(q.price_output_per_m, 0.25);
  EXPECT_EQ(q.extra_body, json::parse(R"({"usage": {"include": true}, "tag": "007",
                                          "provider": {"order": ["deepinfra"], "allow_fallbacks": false}})"));
  ModelEndpoint l = resolve_endpoint(f, Participant::parse("local"));
  EXPECT_EQ(l.api_key_env, "");
  EXPECT_EQ(l.max_tokens, 1024);
  EXPECT_EQ(l.reasoning_effort, "");
  EXPECT_FALSE(l.temperature.has_value());
  auto error_of = [&](auto fn) -> std::string {
    try {
      fn();
    } catch (const spade::Error& e) {
      return e.what();
    }
    return "";
  };
  std::string e1 = error_of([&] { resolve_endpoint(f, Participant::parse("gpt#mini-swe-agent")); });
  EXPECT_NE(e1.find("no model 'gpt'"), std::string::npos) << e1;
  EXPECT_NE(e1.find("local, qwen"), std::string::npos) << e1;
  std::string e2 = error_of([&] { resolve_endpoint(f, Participant::parse("qwen#mini-swe-agent#low#together")); });
  EXPECT_NE(e2.find("no provider 'together'"), std::string::npos) << e2;
  std::string e3 = error_of([&] { parse_endpoints("models:\n  m:\n    model: x\n    base_url: http://h\n    temprature: 1\n", "f.yaml"); });
  EXPECT_NE(e3.find("f.yaml: models.m: unknown key 'temprature'"), std::string::npos) << e3;
  std::string e4 = error_of([&] { parse_endpoints("models:\n  m:\n    base_url: http://h\n", "f.yaml"); });
  EXPECT_NE(e4.find("missing required key 'model'"), std::string::npos) << e4;
  std::string e5 = error_of([&] { make_model_agent(f, "local#codex"); });
  EXPECT_NE(e5.find("harness 'codex' is not available"), std::string::npos) << e5;
}

TEST_F(ModelClientTest, ModelAgentPlaysAHarnessSession) {
  std::string yaml = "models:\n  m:\n    base_url: " + base_url_ + "\n    api_key_env: \"\"\n    model: agent/session\n" +
                     "    price_input_per_m: 2.5\n    price_output_per_m: 10\n";
  EndpointFile f = parse_endpoints(yaml, "inline");
  auto agent = make_model_agent(f, "m#mini-swe-agent");
  std::string ws = fresh_dir("ws");
  WorkspaceSandbox sb(ws);
  HarnessConfig hc;
  hc.step_limit = 5;
  hc.wall_clock_s = 60;
  hc.command_limits.timeout_s = 10;
  SessionContext ctx;
  ctx.participant = "m#mini-swe-agent";
  auto policy = agent->open_session(ctx);
  SessionResult r = run_session(*policy, sb, "write out.txt", hc);
  EXPECT_EQ(r.exit, ExitStatus::Submitted) << r.error;
  ASSERT_EQ(r.steps.size(), 2u);  // the server writes out.txt, then submits
  EXPECT_EQ(spade::read_file(ws + "/out.txt"), "hello\n");
  EXPECT_EQ(r.steps[0].tokens, 150);
  EXPECT_NEAR(r.cost, 2 * 0.0006, 1e-12);  // two calls at 0.0006 USD (see SuccessReportsUsageAndPriceCost)
  EXPECT_EQ(agent->client().totals().calls, 2);
  EXPECT_EQ(requests().at(1)["body"]["messages"].size(), 4u);  // system, task, reply, observation
}

}  // namespace

TEST(ModelEndpoints, ShippedExampleParses) {
  // configs/duel/endpoints.yaml documents the format; it must stay valid.
  EndpointFile f = load_endpoints(std::string(SPADE_SOURCE_DIR) + "/configs/duel/endpoints.yaml");
  ModelEndpoint q = resolve_endpoint(f, Participant::parse("qwen3-8b#mini-swe-agent#high#deepinfra"));
  EXPECT_EQ(q.url(), "https://openrouter.ai/api/v1/chat/completions");
  EXPECT_EQ(q.api_key_env, "OPENROUTER_API_KEY");
  EXPECT_EQ(q.max_tokens, 32768);
  EXPECT_EQ(resolve_endpoint(f, Participant::parse("local")).url(), "http://127.0.0.1:8000/v1/chat/completions");
}
