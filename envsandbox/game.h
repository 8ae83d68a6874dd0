// Game: the lenient wrapper used to play admitted game environments (reference §3), on top of
// one EnvInstance. A broken program never throws here: exceptions and malformed returns become
// observations the agent sees, exactly as the reference does; only a broken process (timeout, crash,
// memory, protocol) ends the episode with GameStep::failure set.
//
// Thread-safety: like EnvInstance, one thread at a time per Game.
#pragma once
#include <nlohmann/json.hpp>

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
  /// kOk while the environment process is healthy; else the CallStatus that broke it (kTimeout,
  /// kExited, kSignal, kProtocol, kUnavailable). The episode is then over (terminated is true).
  CallStatus failure = CallStatus::kOk;
  /// "" when step() answered validly; else why its answer was refused (the step then reads
  /// ("Error: ..." or "Invalid game response", -1.0, terminated), reference §3): "step_exception" (it
  /// raised), "memory" (MemoryError), "step_bad_return" (not a 5-sequence), "step_bad_type" (obs not
  /// str, reward not a number, flags not bool/int/None), "reward_not_finite" (NaN or +-inf: a
  /// non-finite reward never leaves this boundary).
  std::string refused;
  /// Readable explanation when failure or refused is set.
  std::string detail;

  /// Whether an episode that ends with this step is won, as the rest of the code counts success: the
  /// process healthy, terminated, and a positive episode reward (reward::episode_reward is
  /// clamp(reward, -1, 1) when terminated, so positive iff reward > 0; rollout::play_episodes, the
  /// self-play success rates and the cold start's demonstrations all count reward > 0). A step that
  /// does not end the episode is no win.
  bool won() const { return !broken() && terminated && reward > 0; }
  /// The environment process failed (failure is not kOk).
  bool broken() const { return failure != CallStatus::kOk; }
};

/// The step() argument for an answer the agent writes in \boxed{} (the agent's actions are
/// "\boxed{X}": rollout::parse_action re-wraps the boxed content): "\boxed{" + answer + "}", or
/// `answer` itself when it already holds a "\boxed{" (parse_action reduces the doubled box to it).
std::string boxed_answer(const std::string& answer);

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
  /// nullptr with `*reason` = load_failure_reason(), `*detail` the explanation and `*status` the
  /// call's CallStatus (all optional).
  static std::unique_ptr<Game> open(EnvServer& server, const std::string& source, int max_turns_cap,
                                    std::string* reason, std::string* detail = nullptr, CallStatus* status = nullptr);
  /// Wraps an instance on which load() succeeded.
  explicit Game(std::unique_ptr<EnvInstance> loaded);

  /// reset(seed=...) (reset() for nullopt). Returns the observation: the first element of the returned
  /// tuple, or a bare str (tolerated, reference §2). nullopt on failure with `*reason` one of
  /// "reset_exception", "reset_bad_return", "memory" or a process-level reason, and `*status` the
  /// call's CallStatus (kOk for reset_bad_return).
  std::optional<std::string> reset(std::optional<int64_t> seed, std::string* reason = nullptr,
                                   std::string* detail = nullptr, CallStatus* status = nullptr);

  /// step(action[:100k chars]). An exception -> ("Error: <message>", -1.0, terminated); a return that
  /// is not a 5-sequence (str obs, finite number or bool reward, bool/int/None flags) -> ("Invalid game
  /// response", -1.0, terminated); both with GameStep::refused naming why. A broken process ->
  /// terminated with failure set.
  GameStep step(const std::string& action);

  /// A tool-use program's tools after reset(): an OpenAI `tools` array
  /// ([{"type": "function", "function": {"name", "description", "parameters"}}], the order of its
  /// _tools). nullopt with `*reason` "tools_invalid" (no _tools, or a malformed schema: `*detail` says
  /// which) or a process-level reason.
  /// Keys keep the program's order (ordered_json): chat templates render them as written.
  std::optional<nlohmann::ordered_json> tools(std::string* reason = nullptr, std::string* detail = nullptr);

  /// The program's solution() as a list of actions. Empty with `*reason` = "no_solution" (absent),
  /// "solution_exception", "solution_bad_return" (not a list/tuple of str) or a process-level reason;
  /// empty with `*reason` untouched when solution() returned an empty list.
  std::vector<std::string> solution(std::string* reason = nullptr, std::string* detail = nullptr);

  /// Deadline in seconds of each following call (reset, step, solution); nullopt (the default) = the
  /// server's per-call deadlines. The validation gates shorten it to what is left of their time limit.
  void set_call_timeout(std::optional<double> timeout_s) { timeout_s_ = timeout_s; }

  EnvInstance& instance() { return *instance_; }

 private:
  std::unique_ptr<EnvInstance> instance_;
  std::optional<double> timeout_s_;
};

}  // namespace spade::envsandbox
