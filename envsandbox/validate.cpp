#include "envsandbox/validate.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>

#include "envsandbox/frame.h"
#include "envsandbox/game.h"

namespace spade::envsandbox {
namespace {

constexpr double kMaxAbsReward = 10.0;  // reference §4: reward in [-10, 10]
const char* const kBoxedProbes[] = {"\\boxed{1}", "\\boxed{test}", "\\boxed{42}"};
constexpr int64_t kProbeSeeds[] = {42, 123};  // the smoke test's reset seeds (reference §4)
const char* const kRawProbes[] = {"1", "2", "test"};

struct Failure {
  std::string reason, detail;
};
using Check = std::function<std::optional<Failure>()>;

// Failure for a call that did not return normally; `exception_reason` names a raised exception.
Failure call_failure(const CallResult& r, const std::string& exception_reason) {
  return Failure{r.status == CallStatus::kException ? exception_reason : call_status_name(r.status), r.detail};
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
  if (t[0].cut())
    return Failure{"obs_too_large", call + ": the observation is longer than the sandbox's cap (max_obs_chars)"};
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

// Why `v` is not JSON-serialisable (strictly: finite floats, str keys), or "" if it is.
std::string json_problem(const PyValue& v, const std::string& where) {
  switch (v.kind()) {
    case PyValue::Kind::kNone:
    case PyValue::Kind::kBool:
    case PyValue::Kind::kInt:
    case PyValue::Kind::kStr:
      return v.cut() ? where + " was cut by the sandbox's size caps" : "";
    case PyValue::Kind::kFloat:
      return std::isfinite(v.as_double()) ? "" : where + " is " + v.repr(20) + " (not valid JSON)";
    case PyValue::Kind::kTuple:
    case PyValue::Kind::kList:
    case PyValue::Kind::kDict: {
      if (v.cut()) return where + " was cut by the sandbox's size caps (too large or too deep)";
      for (size_t i = 0; i < v.items().size(); ++i) {
        std::string at = where + "[" + (v.is_dict() ? v.keys()[i].repr(30) : std::to_string(i)) + "]";
        if (v.is_dict() && !v.keys()[i].is_str()) return where + " has a non-str key " + v.keys()[i].repr(30);
        std::string p = json_problem(v.items()[i], at);
        if (!p.empty()) return p;
      }
      return "";
    }
    case PyValue::Kind::kOther:
      break;
  }
  return where + " holds " + v.type_label() + ", which is not JSON-serialisable";
}

// One step of a contract episode: what must be identical when replayed.
std::string step_key(const std::vector<PyValue>& t) {
  return t[0].as_str() + "\x1f" + t[1].repr(40) + "\x1f" + (t[2].as_bool() ? "T" : "F") + (t[3].as_bool() ? "T" : "F");
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
    report_.output = instance_ ? instance_->captured_output() : game_->instance().captured_output();
    if (passed && !options_.smoke_only) {
      passed = gate("episode", [&] { return episode(); }) &&
               gate("step_after_done", [&] { return step_after_done(); }) &&
               gate("reset_after_done", [&] { return reset_after_done(); }) &&
               gate("determinism_across_processes", [&] { return across_processes(); }) &&
               gate("close", [&] { return close_twice(); }) &&
               gate("step_latency", [&] { return step_latency(); });
      if (passed && options_.tool_use)
        passed = gate("tool_schemas", [&] { return tool_schemas(); }) &&
                 (!options_.deterministic_reset || gate("deterministic_reset", [&] { return deterministic_reset(); }));
      // Last: the gates above name a more specific cause of a solution that cannot win.
      if (passed) passed = gate("solution_wins", [&] { return solution_wins(); });
    }
    report_.admitted = passed;
    if (passed) report_.reason = "ok";
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
    if (obs.cut())
      return Failure{"obs_too_large", "reset(seed=42): the observation is longer than the sandbox's cap (max_obs_chars)"};
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
      if (s.broken()) return Failure{call_status_name(s.failure), s.detail};
      if (s.terminated || s.truncated) break;
    }
    return std::nullopt;
  }

  // --- contract gates ---

  // A fresh instance with the program loaded and globals reseeded to `global_seed`.
  std::optional<Failure> fresh(std::unique_ptr<EnvInstance>* out, int64_t global_seed) {
    *out = server_.spawn();
    CallResult r = (*out)->load(source_, options_.max_turns_cap, left(server_.options().load_timeout_s));
    if (!r.ok()) return Failure{load_failure_reason(r), "reloading the program: " + r.detail};
    r = (*out)->reseed_globals(global_seed, call_time());
    if (!r.ok()) return call_failure(r, "load_exception");
    return std::nullopt;
  }

  // reset(seed=episode_seed) with the (obs, info) checks.
  std::optional<Failure> checked_reset(EnvInstance& env, std::string* obs) {
    std::string call = "reset(seed=" + std::to_string(options_.episode_seed) + ")";
    CallResult r = env.reset(options_.episode_seed, call_time());
    if (!r.ok()) return call_failure(r, "reset_exception");
    const PyValue& v = r.value;
    if (!v.is_tuple() || v.items().size() != 2 || !v.items()[0].is_str() || !v.items()[1].is_dict())
      return Failure{"reset_bad_return", call + " returned " + v.type_label() + " " + v.repr(80) +
                                             "; expected a tuple (obs: str, info: dict)"};
    std::string p = json_problem(v.items()[1], call + " info");
    if (!p.empty()) return Failure{"info_not_json", p};
    *obs = v.items()[0].as_str();
    return std::nullopt;
  }

  // Plays actions_ (checked) after a reset; fills `trajectory` and `done`.
  std::optional<Failure> play(EnvInstance& env, std::vector<std::string>* trajectory, bool* done) {
    *done = false;
    for (size_t i = 0; i < actions_.size(); ++i) {
      std::string call = "step(" + PyValue::str(actions_[i]).repr(60) + ") #" + std::to_string(i + 1);
      CallResult r = env.step(actions_[i], call_time());
      step_seconds_.push_back(r.seconds);
      if (!r.ok()) return call_failure(r, "step_exception");
      if (auto failure = check_step_return(r.value, call)) return failure;
      const std::vector<PyValue>& t = r.value.items();
      if (i == 0 && t[3].as_bool() && !t[2].as_bool())
        return Failure{"truncated_first_step", call + " returned truncated=True on the first step of an episode"};
      std::string p = json_problem(t[4], call + " info");
      if (!p.empty()) return Failure{"info_not_json", p};
      trajectory->push_back(step_key(t));
      if (t[2].as_bool() || t[3].as_bool()) {
        *done = true;
        break;
      }
    }
    return std::nullopt;
  }

  std::optional<Failure> episode() {
    if (auto f = fresh(&contract_, 1)) return f;
    std::string obs;
    if (auto f = checked_reset(*contract_, &obs)) return f;
    first_obs_ = obs;
    // The program's own solution (when it has one) reaches the end quickly; then the boxed probes.
    CallResult has = contract_->has("solution", call_time());
    if (has.ok() && has.value.as_bool()) {
      CallResult sol = contract_->call("solution", call_time());
      if (!sol.ok() && sol.status != CallStatus::kException) return call_failure(sol, "step_exception");
      if (sol.ok() && (sol.value.is_list() || sol.value.is_tuple()))
        for (const PyValue& a : sol.value.items()) {
          if (!a.is_str() || static_cast<int>(actions_.size()) >= 64) break;
          actions_.push_back(a.as_str());
        }
    }
    for (int i = 0; static_cast<int>(actions_.size()) < options_.episode_steps; ++i)
      actions_.push_back(kBoxedProbes[i % 3]);
    // solution() may have moved the state: start the recorded episode from a clean reset.
    if (auto f = checked_reset(*contract_, &obs)) return f;
    if (obs != first_obs_)
      return Failure{"nondeterministic", "reset(seed=" + std::to_string(options_.episode_seed) +
                                             ") gave different observations twice in one process: " +
                                             PyValue::str(first_obs_).repr(60) + " then " + PyValue::str(obs).repr(60)};
    return play(*contract_, &trajectory_, &done_);
  }

  std::optional<Failure> step_after_done() {
    if (!done_) return std::nullopt;  // the episode did not end within the steps played: nothing to check
    CallResult r = contract_->step(kBoxedProbes[0], call_time());
    if (r.raised()) return std::nullopt;  // raising is a defined answer
    if (!r.ok()) return Failure{call_status_name(r.status), "step after the episode ended: " + r.detail};
    if (auto failure = check_step_return(r.value, "step after the episode ended")) {
      failure->reason = "step_after_done_bad";
      return failure;
    }
    return std::nullopt;
  }

  // Compares a replayed trajectory with the first one.
  std::optional<Failure> same_trajectory(const std::vector<std::string>& again, const std::string& what) {
    for (size_t i = 0; i < std::max(again.size(), trajectory_.size()); ++i) {
      if (i < again.size() && i < trajectory_.size() && again[i] == trajectory_[i]) continue;
      auto show = [](const std::vector<std::string>& t, size_t k) {
        return k < t.size() ? PyValue::str(t[k].substr(0, t[k].find('\x1f'))).repr(60) : std::string("<episode over>");
      };
      return Failure{"nondeterministic", what + ": step " + std::to_string(i + 1) + " differs (" +
                                             show(trajectory_, i) + " vs " + show(again, i) +
                                             ") for the same seed and actions"};
    }
    return std::nullopt;
  }

  std::optional<Failure> reset_after_done() {
    std::string obs;
    if (auto f = checked_reset(*contract_, &obs)) return f;
    if (obs != first_obs_)
      return Failure{"nondeterministic", "reset(seed=" + std::to_string(options_.episode_seed) +
                                             ") after the episode gave " + PyValue::str(obs).repr(60) +
                                             ", first " + PyValue::str(first_obs_).repr(60)};
    std::vector<std::string> again;
    bool done = false;
    if (auto f = play(*contract_, &again, &done)) return f;
    return same_trajectory(again, "replay in the same process");
  }

  std::optional<Failure> across_processes() {
    std::unique_ptr<EnvInstance> other;
    if (auto f = fresh(&other, 2)) return f;
    std::string obs;
    if (auto f = checked_reset(*other, &obs)) return f;
    if (obs != first_obs_)
      return Failure{"nondeterministic", "reset(seed=" + std::to_string(options_.episode_seed) +
                                             ") in a second process (global RNGs reseeded) gave " +
                                             PyValue::str(obs).repr(60) + ", the first " +
                                             PyValue::str(first_obs_).repr(60)};
    std::vector<std::string> again;
    bool done = false;
    if (auto f = play(*other, &again, &done)) return f;
    return same_trajectory(again, "replay in a second process (global RNGs reseeded)");
  }

  std::optional<Failure> close_twice() {
    CallResult has = contract_->has("close", call_time());
    if (!has.ok()) return call_failure(has, "close_exception");
    if (!has.value.as_bool()) return std::nullopt;
    for (int i = 0; i < 2; ++i) {
      CallResult r = contract_->call("close", call_time());
      if (!r.ok()) return call_failure(r, "close_exception");
    }
    return std::nullopt;
  }

  std::optional<Failure> step_latency() {
    if (step_seconds_.empty()) return std::nullopt;
    double total = 0;
    for (double s : step_seconds_) total += s;
    double mean = total / static_cast<double>(step_seconds_.size());
    if (mean > options_.step_budget_s) {
      char text[160];
      std::snprintf(text, sizeof(text), "mean step() time %.3f s over %zu steps exceeds the budget of %.3f s",
                    mean, step_seconds_.size(), options_.step_budget_s);
      return Failure{"step_too_slow", text};
    }
    return std::nullopt;
  }

  // solution_wins: from each probe seed (42, 123) and the episode seed, reset a fresh instance, ask
  // solution() for its answers and play them through the lenient wrapper as the agent would send them
  // (games: boxed_answer; tool use: the answers are whole responses, tool calls and <answer> tags,
  // sent as they are), at most max_turns_cap of them; the episode must end in a win (GameStep::won: the
  // success of an agent episode). Programs without solution() pass.
  std::optional<Failure> solution_wins() {
    std::unique_ptr<EnvInstance> env;
    if (auto f = fresh(&env, 4)) return f;
    CallResult has = env->has("solution", call_time());
    if (!has.ok()) return call_failure(has, "load_exception");
    if (!has.value.as_bool()) return std::nullopt;
    Game game(std::move(env));
    std::vector<int64_t> seeds(std::begin(kProbeSeeds), std::end(kProbeSeeds));
    if (std::find(seeds.begin(), seeds.end(), options_.episode_seed) == seeds.end()) seeds.push_back(options_.episode_seed);
    for (int64_t seed : seeds) {
      const std::string at = "from reset(seed=" + std::to_string(seed) + "): ";
      std::string reason, detail;
      game.set_call_timeout(call_time());
      if (!game.reset(seed, &reason, &detail)) return Failure{reason, at + detail};
      game.set_call_timeout(call_time());
      const std::vector<std::string> answers = game.solution(&reason, &detail);
      if (answers.empty()) {
        if (reason == "solution_exception" || reason == "solution_bad_return")
          return Failure{"solution_does_not_win", at + "solution() gave no answers to play: " + detail};
        if (!reason.empty()) return Failure{reason, at + "solution(): " + detail};
        return Failure{"solution_does_not_win", at + "solution() returned an empty list"};
      }
      GameStep last;
      bool ended = false;
      size_t played = 0;
      for (; played < answers.size() && static_cast<int>(played) < options_.max_turns_cap && !ended; ++played) {
        const std::string action = options_.tool_use ? answers[played] : boxed_answer(answers[played]);
        game.set_call_timeout(call_time());
        last = game.step(action);
        if (last.broken())
          return Failure{call_status_name(last.failure), at + "step(" + PyValue::str(action).repr(60) + ") while playing solution(): " +
                                           last.detail};
        ended = last.terminated || last.truncated;
      }
      std::string shown;
      for (size_t i = 0; i < played; ++i) shown += (i ? ", " : "") + PyValue::str(answers[i]).repr(30);
      const std::string answers_text = "solution() answers [" + shown + "]" +
                                       (played < answers.size() ? " (of " + std::to_string(answers.size()) + ")" : "");
      if (!ended)
        return Failure{"solution_does_not_win",
                       at + "the episode had not ended after " + answers_text +
                           (played == answers.size() ? "" : ", the turn limit of " + std::to_string(options_.max_turns_cap)) +
                           "; the last observation was " + PyValue::str(last.obs).repr(60)};
      if (!last.won()) {
        char reward[32];
        std::snprintf(reward, sizeof reward, "%g", last.reward);
        return Failure{"solution_does_not_win",
                       at + answers_text + " ended the episode with reward " + reward + " (terminated " +
                           (last.terminated ? "True" : "False") + ", truncated " + (last.truncated ? "True" : "False") +
                           "), not a win (terminated with a reward > 0); the last observation was " +
                           PyValue::str(last.obs).repr(60) + (last.refused.empty() ? "" : " (" + last.refused + ": " + last.detail + ")")};
      }
    }
    return std::nullopt;
  }

  std::optional<Failure> tool_report() {
    if (tool_report_) return std::nullopt;
    std::unique_ptr<EnvInstance> env;
    if (auto f = fresh(&env, 3)) return f;
    CallResult r = env->tool_use_report({0, 1, 2}, call_time());
    if (!r.ok()) return call_failure(r, "reset_exception");
    const PyValue* seeds = r.value.find("seeds");
    const PyValue* problem = r.value.find("schema_problem");
    if (!r.value.is_dict() || seeds == nullptr || !seeds->is_list() || problem == nullptr)
      return Failure{"protocol", "tool_use_report returned " + r.value.repr(80)};
    tool_report_ = r.value;
    return std::nullopt;
  }

  std::optional<Failure> tool_schemas() {
    if (auto f = tool_report()) return f;
    const PyValue* problem = tool_report_->find("schema_problem");
    if (problem->is_str()) return Failure{"tool_schema_invalid", problem->as_str()};
    if (!problem->is_none()) return Failure{"protocol", "tool_use_report: schema_problem is " + problem->type_label()};
    return std::nullopt;
  }

  std::optional<Failure> deterministic_reset() {
    if (auto f = tool_report()) return f;
    // criterion index -> (seeds where it could be evaluated, seeds where it raised, last message)
    std::map<size_t, std::pair<int, int>> counts;
    std::map<size_t, std::string> last_error;
    int evaluable = 0;
    std::string reset_error;
    for (const PyValue& row : tool_report_->find("seeds")->items()) {
      const PyValue* reset = row.find("reset");
      const PyValue* criteria = row.find("criteria");
      if (reset == nullptr || !reset->is_str() || criteria == nullptr || !criteria->is_list())
        return Failure{"protocol", "tool_use_report: malformed seed row " + row.repr(80)};
      if (reset->as_str() != "ok") {
        reset_error = reset->as_str();
        continue;
      }
      ++evaluable;
      for (size_t i = 0; i < criteria->items().size(); ++i) {
        const PyValue& c = criteria->items()[i];
        counts[i].first++;
        if (!c.is_str() || c.as_str() != "ok") {
          counts[i].second++;
          last_error[i] = c.is_str() ? c.as_str() : c.repr(60);
        }
      }
    }
    if (evaluable == 0) return Failure{"reset_exception", "reset raised at every seed 0, 1, 2: " + reset_error};
    for (const auto& [i, c] : counts)
      if (c.first == c.second)
        return Failure{"criterion_always_raises", "_message_criteria[" + std::to_string(i) +
                                                      "] raised at every evaluable seed: " + last_error[i]};
    return std::nullopt;
  }

  EnvServer& server_;
  const std::string& source_;
  ValidateOptions options_;
  Clock::time_point deadline_, start_;
  std::unique_ptr<EnvInstance> instance_;
  std::unique_ptr<Game> game_;
  ValidationReport report_;
  // contract gates
  std::unique_ptr<EnvInstance> contract_;
  std::vector<std::string> actions_, trajectory_;
  std::vector<double> step_seconds_;
  std::string first_obs_;
  bool done_ = false;
  std::optional<PyValue> tool_report_;
};

}  // namespace

nlohmann::json ValidationReport::to_json() const {
  nlohmann::json g = nlohmann::json::array();
  for (const GateResult& r : gates)
    g.push_back({{"gate", r.gate}, {"verdict", r.verdict}, {"reason", r.reason}, {"detail", r.detail}, {"seconds", r.seconds}});
  return {{"admitted", admitted}, {"reason", reason}, {"detail", detail}, {"class_name", class_name},
          {"max_turns", max_turns}, {"seconds", seconds}, {"output", output}, {"gates", g}};
}

ValidationReport ValidationReport::from_json(const nlohmann::json& j) {
  ValidationReport r;
  j.at("admitted").get_to(r.admitted);
  j.at("reason").get_to(r.reason);
  j.at("detail").get_to(r.detail);
  j.at("class_name").get_to(r.class_name);
  j.at("max_turns").get_to(r.max_turns);
  j.at("seconds").get_to(r.seconds);
  j.at("output").get_to(r.output);
  for (const nlohmann::json& g : j.at("gates"))
    r.gates.push_back({g.at("gate").get<std::string>(), g.at("verdict").get<std::string>(),
                       g.at("reason").get<std::string>(), g.at("detail").get<std::string>(),
                       g.at("seconds").get<double>()});
  return r;
}

ValidationReport validate_game(EnvServer& server, const std::string& source, const ValidateOptions& options) {
  return SmokeTest(server, source, options).run();
}

}  // namespace spade::envsandbox
