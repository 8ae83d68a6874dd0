// Game: the lenient wrapper used to play admitted game environments (spade-reference.md §3), on top of
// one EnvInstance. A broken program never throws here: exceptions and malformed returns become
// observations the agent sees, exactly as the reference does; only a broken process (timeout, crash,
// memory, protocol) ends the episode with GameStep::failure set.
//
// Thread-safety: like EnvInstance, one thread at a time per Game.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "envsandbox/sandbox.h"

namespace spade::envsandbox {

/// One step's outcome as the agent sees it.
struct GameStep {
  std::string obs;
  double reward = 0;
  bool terminated = false, truncated = false;
  /// "" while the environment process is healthy; else the CallResult reason that broke it
  /// ("timeout", "exited", "signal", "protocol"). The episode is then over (terminated is true).
  std::string failure;
  /// Readable explanation when failure is set or the response was invalid.
  std::string detail;
};

/// Stable reason id for a failed EnvInstance::load(): "syntax_error" (stage compile),
/// "load_exception" (exec), "no_env_class" (find), "init_exception" (constructor), "memory", or the
/// process-level reason ("timeout", "exited", "signal", "protocol").
std::string load_failure_reason(const CallResult& load);

class Game {
 public:
  /// Actions longer than this many characters are cut (reference §3: "Actions capped at 100k").
  static constexpr size_t kMaxActionChars = 100000;

  /// Spawns an instance and loads `source` with `max_turns_cap` (reference §2: 25), through
  /// EnvServer::spawn_loaded (the G plays of one program find it already loaded). On failure returns
  /// nullptr with `*reason` = load_failure_reason() and `*detail` the explanation (both optional).
  static std::unique_ptr<Game> open(EnvServer& server, const std::string& source, int max_turns_cap,
                                    std::string* reason, std::string* detail = nullptr);
  /// Wraps an instance on which load() succeeded.
  explicit Game(std::unique_ptr<EnvInstance> loaded);

  /// reset(seed=...) (reset() for nullopt). Returns the observation: the first element of the returned
  /// tuple, or a bare str (tolerated, reference §2). nullopt on failure with `*reason` one of
  /// "reset_exception", "reset_bad_return", "memory" or a process-level reason.
  std::optional<std::string> reset(std::optional<int64_t> seed, std::string* reason = nullptr,
                                   std::string* detail = nullptr);

  /// step(action[:100k chars]). An exception -> ("Error: <message>", -1.0, terminated); a return that
  /// is not a 5-sequence (str obs, finite number or bool reward, bool/int/None flags) -> ("Invalid game
  /// response", -1.0, terminated); a broken process -> terminated with failure set.
  GameStep step(const std::string& action);

  /// The program's solution() as a list of actions. Empty with `*reason` = "no_solution" (absent),
  /// "solution_exception", "solution_bad_return" (not a list/tuple of str) or a process-level reason.
  std::vector<std::string> solution(std::string* reason = nullptr, std::string* detail = nullptr);

  EnvInstance& instance() { return *instance_; }

 private:
  std::unique_ptr<EnvInstance> instance_;
};

}  // namespace spade::envsandbox
