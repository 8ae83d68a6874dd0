#include "envsandbox/validate.h"

#include <algorithm>
#include <cmath>
#include <functional>

#include "envsandbox/frame.h"
#include "envsandbox/game.h"

namespace spade::envsandbox {
namespace {

constexpr double kMaxAbsReward = 10.0;  // reference §4: reward in [-10, 10]
const char* const kBoxedProbes[] = {"\\boxed{1}", "\\boxed{test}", "\\boxed{42}"};
const char* const kRawProbes[] = {"1", "2", "test"};

struct Failure {
  std::string reason, detail;
};
using Check = std::function<std::optional<Failure>()>;

// Failure for a call that did not return normally; `exception_reason` names a raised exception.
Failure call_failure(const CallResult& r, const std::string& exception_reason) {
  return Failure{r.reason == "exception" ? exception_reason : r.reason, r.detail};
}

// Strict 5-tuple check of one step() return (reference §4).
std::optional<Failure> check_step_return(const PyValue& v, const std::string& call) {
  if (!v.is_tuple())
    return Failure{"step_bad_return", call + " returned " + v.type_label() + " " + v.repr(80) +
                                          "; expected a tuple (obs, reward, terminated, truncated, info)"};
  const std::vector<PyValue>& t = v.items();
  if (t.size() != 5)
    return Failure{"step_bad_arity", call + " returned a tuple of " + std::to_string(t.size()) +
                                         " items; expected 5 (obs, reward, terminated, truncated, info)"};
  auto bad_type = [&](const char* field, const PyValue& got, const char* expected) {
    return Failure{"step_bad_type", call + ": " + field + " is " + got.type_label() + " " + got.repr(60) +
                                        "; expected " + expected};
  };
  if (!t[0].is_str()) return bad_type("obs", t[0], "str");
  if (!t[1].is_number()) return bad_type("reward", t[1], "int or float");
  if (!t[2].is_bool()) return bad_type("terminated", t[2], "bool");
  if (!t[3].is_bool()) return bad_type("truncated", t[3], "bool");
  if (!t[4].is_dict()) return bad_type("info", t[4], "dict");
  double reward = t[1].as_double();
  if (!std::isfinite(reward) || std::fabs(reward) > kMaxAbsReward)
    return Failure{"reward_out_of_range", call + ": reward " + t[1].repr(40) + " is " +
                                              (std::isfinite(reward) ? "outside [-10, 10]" : "not finite")};
  return std::nullopt;
}

class SmokeTest {
 public:
  SmokeTest(EnvServer& server, const std::string& source, const ValidateOptions& options)
      : server_(server), source_(source), options_(options), deadline_(deadline_after(options.time_limit_s)),
        start_(Clock::now()) {}

  ValidationReport run() {
    instance_ = server_.spawn();
    bool passed = gate("load", [&] { return load(); }) && gate("interface", [&] { return interface(); }) &&
                  gate("reset_seed_42", [&] { return reset_42(); }) &&
                  gate("step_probes", [&] { return step_probes(); }) &&
                  gate("reset_seed_123", [&] { return reset_123(); }) &&
                  gate("lenient_play", [&] { return lenient_play(); });
    report_.admitted = passed;
    if (passed) report_.reason = "ok";
    report_.output = instance_ ? instance_->captured_output() : game_->instance().captured_output();
    report_.seconds = std::chrono::duration<double>(Clock::now() - start_).count();
    return report_;
  }

 private:
  bool gate(const std::string& name, const Check& check) {
    auto t0 = Clock::now();
    std::optional<Failure> failure = check();
    GateResult g{name, failure ? "fail" : "pass", failure ? failure->reason : "ok", failure ? failure->detail : "",
                 std::chrono::duration<double>(Clock::now() - t0).count()};
    report_.gates.push_back(g);
    if (failure) {
      report_.reason = failure->reason;
      report_.detail = name + ": " + failure->detail;
    }
    return !failure;
  }

  // Per-call deadline: the server's, shortened to what is left of the smoke test's time limit.
  double left(double per_call) const {
    double rest = std::chrono::duration<double>(deadline_ - Clock::now()).count();
    return std::max(0.001, std::min(per_call, rest));
  }
  double call_time() const { return left(server_.options().call_timeout_s); }

  std::optional<Failure> load() {
    CallResult r = instance_->load(source_, options_.max_turns_cap, left(server_.options().load_timeout_s));
    if (!r.ok()) return Failure{load_failure_reason(r), r.detail};
    report_.class_name = r.value.as_str();
    report_.max_turns = instance_->max_turns().value_or(-1);
    return std::nullopt;
  }

  std::optional<Failure> interface() {
    for (const char* method : {"reset", "step"}) {
      CallResult r = instance_->has(method, call_time());
      if (!r.ok()) return call_failure(r, "load_exception");
      if (!r.value.as_bool())
        return Failure{"missing_method", "class " + report_.class_name + " has no callable " + method + "()"};
    }
    return std::nullopt;
  }

  std::optional<Failure> reset_42() {
    CallResult r = instance_->reset(42, call_time());
    if (!r.ok()) return call_failure(r, "reset_exception");
    const PyValue& v = r.value;
    if (!v.is_tuple() || v.items().size() != 2)
      return Failure{"reset_bad_return", "reset(seed=42) returned " + v.type_label() + " " + v.repr(80) +
                                             "; expected a tuple (obs: str, info: dict)"};
    const PyValue& obs = v.items()[0];
    const PyValue& info = v.items()[1];
    if (!obs.is_str() || obs.as_str().empty())
      return Failure{"reset_bad_return", "reset(seed=42): obs is " + obs.type_label() + " " + obs.repr(60) +
                                             "; expected a non-empty str"};
    if (!info.is_dict())
      return Failure{"reset_bad_return", "reset(seed=42): info is " + info.type_label() + "; expected dict"};
    return std::nullopt;
  }

  std::optional<Failure> step_probes() {
    for (const char* action : kBoxedProbes) {
      std::string call = "step(" + PyValue::str(action).repr() + ")";
      CallResult r = instance_->step(action, call_time());
      if (!r.ok()) return call_failure(r, "step_exception");
      if (auto failure = check_step_return(r.value, call)) return failure;
      const std::vector<PyValue>& t = r.value.items();
      if (t[2].as_bool() || t[3].as_bool()) break;  // episode over: stop early
    }
    return std::nullopt;
  }

  std::optional<Failure> reset_123() {
    CallResult r = instance_->reset(123, call_time());
    if (!r.ok()) return call_failure(r, "reset_exception");
    return std::nullopt;
  }

  std::optional<Failure> lenient_play() {
    game_ = std::make_unique<Game>(std::move(instance_));
    std::string reason, detail;
    if (!game_->reset(std::nullopt, &reason, &detail)) return Failure{reason, detail};
    for (const char* action : kRawProbes) {
      GameStep s = game_->step(action);
      if (!s.failure.empty()) return Failure{s.failure, s.detail};
      if (s.terminated || s.truncated) break;
    }
    return std::nullopt;
  }

  EnvServer& server_;
  const std::string& source_;
  ValidateOptions options_;
  Clock::time_point deadline_, start_;
  std::unique_ptr<EnvInstance> instance_;
  std::unique_ptr<Game> game_;
  ValidationReport report_;
};

}  // namespace

nlohmann::json ValidationReport::to_json() const {
  nlohmann::json g = nlohmann::json::array();
  for (const GateResult& r : gates)
    g.push_back({{"gate", r.gate}, {"verdict", r.verdict}, {"reason", r.reason}, {"detail", r.detail}, {"seconds", r.seconds}});
  return {{"admitted", admitted}, {"reason", reason}, {"detail", detail}, {"class_name", class_name},
          {"max_turns", max_turns}, {"seconds", seconds}, {"output", output}, {"gates", g}};
}

ValidationReport validate_game(EnvServer& server, const std::string& source, const ValidateOptions& options) {
  return SmokeTest(server, source, options).run();
}

}  // namespace spade::envsandbox
