// Validation gates for generated game environments. First the reference smoke test
// (reference §4, item 1), run in one sandboxed instance:
//   load: exec the program (a SyntaxError or any exception rejects), find and instantiate the *Env class;
//   interface: reset and step exist (callable);
//   reset_seed_42: reset(seed=42) returns (non-empty str obs, dict info);
//   step_probes: step("\boxed{1}"), step("\boxed{test}"), step("\boxed{42}"), stopping early once an
//     episode ends; each returns a 5-tuple (str obs, int/float reward - bool is not a number here -,
//     strict bool terminated and truncated, dict info) with a finite reward in [-10, 10];
//   reset_seed_123: reset(seed=123) succeeds;
//   lenient_play: reset() then "1", "2", "test" through the lenient wrapper (game.h); only a broken
//     process (timeout, crash, memory, protocol) fails it.
// Then, unless ValidateOptions::smoke_only, the contract gates (Gymnasium's env checker adapted,
// sandbox anchors "Checker conventions"), in fresh instances:
//   episode: globals reseeded (random/numpy seed 1), reset(seed=episode_seed) returns (str, dict), then
//     up to episode_steps actions (the program's solution() when it has one, then the boxed probes);
//     every step is checked as in step_probes (finite reward), truncated must not be true after the
//     first step, and every info (reset's and step's) must be JSON-serialisable;
//   step_after_done: one more step once the episode ended: may raise, must not break the process, and
//     a return must be a valid 5-tuple (skipped, and passed, when the episode did not end);
//   reset_after_done: reset(seed=episode_seed) in the same process replays the same trajectory
//     (observations, rewards, flags) - reset determinism within a process;
//   determinism_across_processes: a second process with globals reseeded to 2 replays it too (catches
//     unseeded random/numpy use, time or address dependence);
//   close: close() twice, when defined, raises nothing and keeps the process alive;
//   step_latency: mean step() wall time of these episodes within step_budget_s.
// And with ValidateOptions::tool_use (reference §7 and §4 gate 2):
//   tool_schemas: after reset(seed=0), _tools is {identifier: {description, parameters}} where
//     parameters is a JSON Schema object and each tool has a callable tool_<name>;
//   deterministic_reset: for seeds 0, 1, 2 reset and evaluate every _message_criteria entry on _state;
//     reject only if some criterion raises at every seed whose reset succeeded (or no reset succeeds);
//     not run when ValidateOptions::deterministic_reset is false.
// Last, unless smoke_only (issue 17):
//   solution_wins: when the program defines solution(), it is played from each probe seed (42, 123,
//     and episode_seed) in a fresh instance: reset(seed), solution(), then its answers through the
//     lenient wrapper as the agent sends them (games: boxed_answer in game.h; tool use: as they are,
//     whole responses), at most max_turns_cap; the episode must be won as an agent episode is
//     (GameStep::won: terminated with a reward > 0). A solution() that raises, returns no answers, or
//     does not win from some seed rejects the program (solution_does_not_win); without solution()
//     the gate passes.
// Checks stop at the first failure. The whole run shares one time limit (reference: 60 s).
//
// Reason ids (stable): "ok"; syntax_error, load_exception, no_env_class, init_exception,
// missing_method, reset_exception, reset_bad_return, step_exception, step_bad_return (not a tuple),
// step_bad_arity, step_bad_type, reward_out_of_range (incl. NaN/inf), obs_too_large (an observation
// over SandboxOptions::max_obs_chars, which the sandbox cut); truncated_first_step,
// info_not_json, step_after_done_bad, nondeterministic, close_exception, step_too_slow,
// solution_does_not_win, tool_schema_invalid, criterion_always_raises; and the process-level ids
// timeout, memory, exited, signal, protocol.
//
// Thread-safety: validate_game may run concurrently on one EnvServer.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "envsandbox/sandbox.h"

namespace spade::envsandbox {

struct ValidateOptions {
  int max_turns_cap = 25;   // reference §2: max_turns = min(class default, 25)
  double time_limit_s = 60; // reference §4: smoke test 60 s; each call also obeys the server's deadlines
  /// true: run only the reference smoke test (gate 1), exactly as the reference does; false (the
  /// default): also the contract gates above.
  bool smoke_only = false;
  /// Seed and length (steps; fewer when the episode ends) of the contract episodes.
  int64_t episode_seed = 7;
  int episode_steps = 12;
  /// Largest mean step() wall time (seconds, as the host measures it) in the contract episodes.
  double step_budget_s = 0.5;
  /// A tool-use program (reference §7): also run tool_schemas and deterministic_reset.
  bool tool_use = false;
  /// false: tool use without the deterministic_reset gate (the reference skips it at rollout 0).
  bool deterministic_reset = true;
};

/// One check of the gate.
struct GateResult {
  std::string gate;     // "load", "interface", "reset_seed_42", "step_probes", "reset_seed_123", "lenient_play",
                        // then "episode", "step_after_done", "reset_after_done",
                        // "determinism_across_processes", "close", "step_latency"; tool use:
                        // "tool_schemas", "deterministic_reset"; then "solution_wins"
  std::string verdict;  // "pass" or "fail"
  std::string reason;   // "ok" or a reason id (see above)
  std::string detail;   // readable: which call, what was wrong, the exception message
  double seconds = 0;
};

struct ValidationReport {
  bool admitted = false;
  std::string reason;  // "ok" when admitted, else the failing gate's reason id
  std::string detail;  // the failing gate's detail
  std::string class_name;
  int64_t max_turns = -1;   // passed to the constructor; -1 if it takes no max_turns
  std::vector<GateResult> gates;
  std::string output;  // the program's captured output (capped), for diagnosis
  double seconds = 0;

  /// {"admitted","reason","detail","class_name","max_turns","seconds","output","gates":[{...}]}
  nlohmann::json to_json() const;
  /// The inverse of to_json (exact; used to exchange reports between data-parallel ranks). Throws
  /// nlohmann::json::exception on a missing or mistyped field.
  static ValidationReport from_json(const nlohmann::json& j);
};

/// Runs the gates on `source` (gate 1 in one fresh instance, the contract gates in two more). Never
/// throws for a bad program; throws spade::Error only if no instance can be spawned (see
/// EnvServer::spawn).
ValidationReport validate_game(EnvServer& server, const std::string& source, const ValidateOptions& options = {});

}  // namespace spade::envsandbox
