#include "envsandbox/game.h"

#include <cmath>

namespace spade::envsandbox {
namespace {

template <typename T>
void set(T* out, const T& value) {
  if (out != nullptr) *out = value;
}

// The first `max_chars` code points of UTF-8 text.
std::string cut_chars(const std::string& s, size_t max_chars) {
  size_t chars = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80 && chars++ == max_chars) return s.substr(0, i);
  }
  return s;
}

// Lenient truthiness of a termination flag: bool, int or None (reference wrapper applies bool()).
bool flag_value(const PyValue& v, bool* ok) {
  if (v.is_bool()) return v.as_bool();
  if (v.is_none()) return false;
  if (v.is_int()) return v.as_double() != 0;
  *ok = false;
  return false;
}

GameStep invalid_response(const char* refused, const std::string& why) {
  GameStep s;
  s.obs = "Invalid game response";
  s.reward = -1.0;
  s.terminated = true;
  s.refused = refused;
  s.detail = why;
  return s;
}

}  // namespace

std::string boxed_answer(const std::string& answer) {
  return answer.find("\\boxed{") != std::string::npos ? answer : "\\boxed{" + answer + "}";
}

std::string load_failure_reason(const CallResult& load) {
  if (load.status != CallStatus::kException) return call_status_name(load.status);
  if (load.stage == "compile") return "syntax_error";
  if (load.stage == "find") return "no_env_class";
  if (load.stage == "init") return "init_exception";
  return "load_exception";
}

std::unique_ptr<Game> Game::open(EnvServer& server, const std::string& source, int max_turns_cap,
                                 std::string* reason, std::string* detail, CallStatus* status) {
  CallResult r;
  std::unique_ptr<EnvInstance> instance = server.spawn_loaded(source, max_turns_cap, &r);
  if (!r.ok()) {
    set(reason, load_failure_reason(r));
    set(detail, r.detail);
    set(status, r.status);
    return nullptr;
  }
  return std::make_unique<Game>(std::move(instance));
}

Game::Game(std::unique_ptr<EnvInstance> loaded) : instance_(std::move(loaded)) {}

std::optional<std::string> Game::reset(std::optional<int64_t> seed, std::string* reason, std::string* detail,
                                       CallStatus* status) {
  CallResult r = instance_->reset(seed, timeout_s_);
  set(status, r.status);
  if (!r.ok()) {
    set(reason, std::string(r.status == CallStatus::kException ? "reset_exception" : call_status_name(r.status)));
    set(detail, r.detail);
    return std::nullopt;
  }
  const PyValue& v = r.value;
  if (v.is_str()) return v.as_str();
  if ((v.is_tuple() || v.is_list()) && !v.items().empty() && v.items()[0].is_str()) return v.items()[0].as_str();
  set(reason, std::string("reset_bad_return"));
  set(detail, "reset() returned " + v.type_label() + " " + v.repr(80) + "; expected (str, dict) or str");
  return std::nullopt;
}

GameStep Game::step(const std::string& action) {
  CallResult r = instance_->step(cut_chars(action, kMaxActionChars), timeout_s_);
  if (r.raised()) {
    GameStep s;
    s.obs = "Error: " + r.message;
    s.reward = -1.0;
    s.terminated = true;
    s.refused = r.status == CallStatus::kMemory ? "memory" : "step_exception";
    s.detail = r.detail;
    return s;
  }
  if (!r.ok()) {
    GameStep s;
    s.terminated = true;
    s.failure = r.status;
    s.detail = r.detail;
    return s;
  }
  const PyValue& v = r.value;
  if (!(v.is_tuple() || v.is_list()) || v.items().size() != 5)
    return invalid_response("step_bad_return", "step() returned " + v.type_label() + " " + v.repr(80) + "; expected a 5-tuple");
  const std::vector<PyValue>& items = v.items();
  if (!items[0].is_str())
    return invalid_response("step_bad_type", "step() observation is " + items[0].type_label() + ", expected str");
  const PyValue& reward = items[1];
  if (!(reward.is_number() || reward.is_bool()))
    return invalid_response("step_bad_type", "step() reward " + reward.repr(40) + " is " + reward.type_label() +
                                                 ", not a number");
  const double value = reward.is_bool() ? (reward.as_bool() ? 1.0 : 0.0) : reward.as_double();
  if (!std::isfinite(value))
    return invalid_response("reward_not_finite", "step() reward " + reward.repr(40) + " is not a finite number");
  bool ok = true;
  GameStep s;
  s.terminated = flag_value(items[2], &ok);
  s.truncated = flag_value(items[3], &ok);
  if (!ok) return invalid_response("step_bad_type", "step() terminated/truncated flags are not bool");
  s.obs = items[0].as_str();
  s.reward = value;
  return s;
}

std::optional<nlohmann::ordered_json> Game::tools(std::string* reason, std::string* detail) {
  CallResult r = instance_->tool_schemas(timeout_s_);
  if (!r.ok()) {
    set(reason, std::string(r.status == CallStatus::kException ? "tools_invalid" : call_status_name(r.status)));
    set(detail, r.detail);
    return std::nullopt;
  }
  nlohmann::ordered_json tools = r.value.is_str() && !r.value.cut()
                                     ? nlohmann::ordered_json::parse(r.value.as_str(), nullptr, false)
                                     : nlohmann::ordered_json();
  if (!tools.is_array() || tools.empty()) {
    set(reason, std::string("tools_invalid"));
    set(detail, r.value.cut() ? "the tool schemas are longer than the observation cap (max_obs_chars)"
                              : "tool_schemas() returned " + r.value.type_label() + " " + r.value.repr(80));
    return std::nullopt;
  }
  return tools;
}

std::vector<std::string> Game::solution(std::string* reason, std::string* detail) {
  std::vector<std::string> actions;
  CallResult has = instance_->has("solution", timeout_s_);
  if (!has.ok() || !has.value.as_bool()) {
    set(reason, std::string(has.ok() ? "no_solution" : call_status_name(has.status)));
    set(detail, has.ok() ? std::string("the environment defines no solution() method") : has.detail);
    return actions;
  }
  CallResult r = instance_->call("solution", timeout_s_);
  if (!r.ok()) {
    set(reason, std::string(r.status == CallStatus::kException ? "solution_exception" : call_status_name(r.status)));
    set(detail, r.detail);
    return actions;
  }
  if (r.value.is_list() || r.value.is_tuple()) {
    for (const PyValue& item : r.value.items()) {
      if (!item.is_str()) break;
      actions.push_back(item.as_str());
    }
    if (actions.size() == r.value.items().size() && !r.value.cut()) return actions;
  }
  actions.clear();
  set(reason, std::string("solution_bad_return"));
  set(detail, "solution() returned " + r.value.type_label() + " " + r.value.repr(80) + "; expected a list of str");
  return actions;
}

}  // namespace spade::envsandbox
