// The SWE-Duel agent harness: a mini-swe-agent-style loop (reference §5). Each step the
// policy answers with exactly one ```bash block; the command runs in the workspace sandbox; its output
// (truncated) comes back as the observation. A command whose output starts with the submit sentinel
// ends the session. Limits: step_limit steps, then up to recovery_turns turns of recovery_steps steps
// while artifacts are missing (each starts with a reminder naming them); a wall clock for the whole
// session. The trajectory is saved after every step, whatever happens.
//
// Policies: ReplayPolicy plays scripted commands (deterministic tests and fixtures); ModelPolicy
// (evaldual/model_agent.h) asks an OpenAI-compatible endpoint through ChatClient (evaldual/model_client.h).
//
// Thread-safety: run_session() is reentrant; a Policy instance belongs to one session at a time.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "evaldual/workspace_sandbox.h"

namespace spade::evaldual {

/// One chat message.
struct Message {
  std::string role;     // "system" | "user" | "assistant"
  std::string content;
};

/// What a policy answered.
struct PolicyReply {
  std::string content;
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
  double cost = 0.0;     // USD (reference §5: usage.cost, else tokens x price)
};

/// The model side of the loop. query() may throw spade::Error for a transport failure that retries
/// could not fix; the harness then ends the session (status Error) with the trajectory saved.
class Policy {
 public:
  virtual ~Policy() = default;
  virtual PolicyReply query(const std::vector<Message>& messages) = 0;
};

/// Plays a fixed list of shell commands, one per step, each wrapped as
/// "THOUGHT: scripted step N\n\n```bash\nCOMMAND\n```". Replies verbatim when a command begins with
/// "RAW:" (to test format errors). When the script runs out it submits. Not thread-safe.
class ReplayPolicy : public Policy {
 public:
  explicit ReplayPolicy(std::vector<std::string> commands, std::string submit_sentinel = kDefaultSentinel);
  PolicyReply query(const std::vector<Message>& messages) override;
  static constexpr const char* kDefaultSentinel = "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT";

 private:
  std::vector<std::string> commands_;
  std::string sentinel_;
  size_t next_ = 0;
};

/// Loop limits and templates (reference §5 and arena.yaml: 50 steps, 3 x 6 recovery, 1800 s).
struct HarnessConfig {
  int step_limit = 50;
  int recovery_turns = 3;
  int recovery_steps = 6;
  double wall_clock_s = 1800.0;
  size_t observation_max_chars = 10000;  // longer outputs keep head and tail halves
  std::string submit_sentinel = ReplayPolicy::kDefaultSentinel;
  SandboxLimits command_limits;          // per command (its timeout_s is capped by the wall clock left)
  std::string system_prompt =
      "You are a software engineer working in a shell. Reply with a THOUGHT and exactly one ```bash code "
      "block holding one command. When done, run: echo {sentinel}";
};

/// How a session ended (reference §5 exit statuses, plus Error for a policy failure).
enum class ExitStatus { Submitted, LimitsExceeded, WallClockTimeout, Error };
const char* exit_status_name(ExitStatus s);

/// One step of the normalized trajectory (reference §5).
struct TrajectoryStep {
  int step = 0;
  std::string thought;       // the reply without its bash block
  std::string action;        // the command ("" on a format error)
  std::string observation;   // what the policy was shown next
  int rc = 0;                // the command's exit status (-1 timeout)
  int64_t tokens = 0;
  double cost = 0.0;
  double step_seconds = 0.0;
  double cumulative_seconds = 0.0;
  bool recovery = false;     // taken during a recovery turn
};

/// A finished session.
struct SessionResult {
  ExitStatus exit = ExitStatus::LimitsExceeded;
  std::vector<TrajectoryStep> steps;
  std::vector<Message> messages;
  std::vector<std::string> missing_artifacts;  // still missing at the end (empty = complete)
  int recovery_turns_used = 0;
  double seconds = 0.0;
  double cost = 0.0;                           // USD, summed over the steps
  int64_t tokens = 0;                          // prompt + completion tokens, summed over the steps
  std::string error;                           // ExitStatus::Error: the policy's message
};

/// Names of the artifacts still missing in the workspace (empty: all present).
using ArtifactCheck = std::function<std::vector<std::string>()>;

/// Runs one session of `policy` on `sandbox`'s workspace with the task prompt `task`. `missing`
/// (may be empty) decides submission completeness. When `trajectory_path` is non-empty the
/// trajectory JSON is written there (atomically) after every step. Never throws for agent behaviour;
/// throws spade::Error only if the sandbox cannot start.
SessionResult run_session(Policy& policy, const WorkspaceSandbox& sandbox, const std::string& task,
                          const HarnessConfig& config, const ArtifactCheck& missing = nullptr,
                          const std::string& trajectory_path = "");

/// The trajectory as JSON text (exit status, steps, cost, seconds, missing artifacts).
std::string trajectory_json(const SessionResult& result);

/// Extracts the ```bash blocks of a reply (content between the fences).
std::vector<std::string> bash_blocks(const std::string& reply);

}  // namespace spade::evaldual
