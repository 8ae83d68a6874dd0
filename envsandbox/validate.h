// Validation gate 1 for generated game environments: the reference smoke test
// (spade-reference.md §4, item 1), run in one sandboxed instance:
//   load: exec the program (a SyntaxError or any exception rejects), find and instantiate the *Env class;
//   interface: reset and step exist (callable);
//   reset_seed_42: reset(seed=42) returns (non-empty str obs, dict info);
//   step_probes: step("\boxed{1}"), step("\boxed{test}"), step("\boxed{42}"), stopping early once an
//     episode ends; each returns a 5-tuple (str obs, int/float reward - bool is not a number here -,
//     strict bool terminated and truncated, dict info) with a finite reward in [-10, 10];
//   reset_seed_123: reset(seed=123) succeeds;
//   lenient_play: reset() then "1", "2", "test" through the lenient wrapper (game.h); only a broken
//     process (timeout, crash, memory, protocol) fails it.
// Checks stop at the first failure. The whole test shares one time limit (reference: 60 s).
//
// Reason ids (stable): "ok"; syntax_error, load_exception, no_env_class, init_exception,
// missing_method, reset_exception, reset_bad_return, step_exception, step_bad_return (not a tuple),
// step_bad_arity, step_bad_type, reward_out_of_range (incl. NaN/inf); and the process-level ids
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
};

/// One check of the gate.
struct GateResult {
  std::string gate;     // "load", "interface", "reset_seed_42", "step_probes", "reset_seed_123", "lenient_play"
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
};

/// Runs gate 1 on `source` in a fresh instance. Never throws for a bad program; throws spade::Error
/// only if no instance can be spawned (see EnvServer::spawn).
ValidationReport validate_game(EnvServer& server, const std::string& source, const ValidateOptions& options = {});

}  // namespace spade::envsandbox
