// The SWE-Duel protocol: Red's three sessions and their gates (task creation), Blue's defense and
// its scoring (paper §3.2-3.3; reference §2-3).
//
// Workspace conventions (kDuelDir = ".duel", never part of any diff):
//   session A writes .duel/metadata.json {"target_files": [...], "exploration_summary", "feature_spec",
//     "feature_rationale", optional "pre_existing_failures": [test ids]} and >= 1 file under
//     .duel/feature_tests/ (T_f); its code changes are d_f.
//   session B (fresh, given s and d_f) embeds the bug, writes .duel/bug.json {"bug_type",
//     "bug_description", "bug_location"} and >= 1 file under .duel/bug_tests/ (T_b); its code is d.
//   session C and Blue get pub(C) = (repo, s, d, T_f) only: a pristine copy with d applied and T_f
//     under .duel/feature_tests/; their code changes are d'. Nothing sealed is ever written there.
//
// Gates (reference §2), in order, the first failure ends the attempt:
//   after A (feature-only; failure kind "feature-gate"): existing_tests, feature_tests, complexity on d_f;
//   after B (kind "validation"): diff_valid(d); existing_tests(d) with the pristine baseline failures and
//   Red's recorded failures deselected; feature_tests(d) all pass; bug_tests: >= 1 failure on d AND all
//   pass on d_f; complexity(d): lines added >= 10, assertions in T_f >= 2, test functions in T_f >= 1,
//   counted per language; self_review: session C's d' passes T_e, T_f and T_b.
// Scoring (reference §3): empty d' -> 0; T_e fails -> everything 0; then T_f and T_b;
//   blue_composite = s_regression * s_feature * s_bugfix, red_composite = 1 - blue_composite;
//   outcome: clean_repair (1/1/1), latent_bug_ships (T_e, T_f pass, T_b fails), collapse (otherwise).
//
// Thread-safety: functions are reentrant; concurrent calls must use distinct work directories.
#pragma once
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "evaldual/harness.h"
#include "evaldual/repo_spec.h"
#include "evaldual/task.h"
#include "evaldual/task_bank.h"

namespace spade::evaldual {

/// Who is asked, for what (keys scripted policies and trajectories).
struct SessionContext {
  std::string participant;  // Participant id of the agent playing this session
  std::string role;         // "red_a" | "red_b" | "red_c" | "blue"
  std::string repo;
  int slot = 0;             // Red's slot (for blue: the slot of the task's author)
  int attempt = 0;          // Red's attempt (1-based; 0 for blue)
  std::string red;          // author of the task (red_c, blue)
  std::string task_id;      // red_c, blue
};

/// A participant's agent: hands out one fresh Policy per session (paper §3.2 "Every session starts
/// with a fresh context"). Implementations: ScriptedAgent (replay); ModelAgent (evaldual/model_agent.h: an OpenAI-compatible endpoint).
/// open_session() must be thread-safe: a match plays its turns in parallel (duel_match.h).
class Agent {
 public:
  virtual ~Agent() = default;
  virtual std::unique_ptr<Policy> open_session(const SessionContext& ctx) = 0;
};

/// The key a ScriptedAgent looks scripts up by:
///   red sessions "REPO/red_a/sSLOT/aATTEMPT" (also red_b, red_c), blue "REPO/blue/RED/sSLOT".
std::string session_key(const SessionContext& ctx);

/// Replays scripted commands per session (ReplayPolicy). A session without a script submits at once.
/// Thread-safety: add() before play; open_session() and opened() may be called concurrently.
class ScriptedAgent : public Agent {
 public:
  ScriptedAgent() = default;
  ScriptedAgent(const ScriptedAgent& other) : scripts_(other.scripts_), opened_(other.opened()) {}
  void add(const std::string& key, std::vector<std::string> commands) { scripts_[key] = std::move(commands); }
  std::unique_ptr<Policy> open_session(const SessionContext& ctx) override;
  /// Keys opened so far, in the order the sessions were opened (for tests).
  std::vector<std::string> opened() const {
    std::lock_guard<std::mutex> lock(mu_);
    return opened_;
  }

 private:
  std::map<std::string, std::vector<std::string>> scripts_;
  mutable std::mutex mu_;
  std::vector<std::string> opened_;
};

/// Protocol settings (reference §7 arena.yaml: 50 steps, 5 attempts, 1 slot per repository).
struct ProtocolConfig {
  HarnessConfig red_harness;
  HarnessConfig blue_harness;
  int attempts_per_slot = 5;
  int slots_per_repo = 1;
  int min_lines_added = 10;
  int min_assertions = 2;
  int min_test_functions = 1;
  std::string work_dir;      // scratch space for workspaces and trajectories (required)
};

/// Binary scores of one defense (reference §1 TurnScore).
struct TurnScore {
  int s_regression = 0, s_feature = 0, s_bugfix = 0;
  double blue_composite = 0.0, red_composite = 1.0;
  std::string outcome;       // clean_repair | latent_bug_ships | collapse
  bool empty_fix = false;
  std::string detail;        // the failing suite's reason
};
nlohmann::json to_json(const TurnScore& s);
TurnScore turn_score_from_json(const nlohmann::json& j);

/// Counts of test functions and assertions in test files, per language (python, c, go, java,
/// javascript; others count as python). Used by the complexity gate.
struct TestCounts {
  int test_functions = 0;
  int assertions = 0;
};
TestCounts count_tests(const std::string& language, const std::map<std::string, std::string>& files);

/// Builds a scratch workspace (pristine + `diff` + `injected` files) and runs either the existing
/// suite (`run_files` empty: spec.test_command / spec.adapter) or the injected test files `run_files`
/// (spec.injected_test_command / the injected adapter), in the sandbox. A diff that does not apply
/// gives a failed outcome (reason names the hunk). The scratch directory is removed afterwards.
TestOutcome run_tests(const PreparedRepo& repo, const std::string& diff, const std::map<std::string, std::string>& injected,
                      const std::vector<std::string>& run_files, const std::string& scratch_dir);

/// The outcome with the failures named in `deselected` removed (reference §2 "existing_tests with
/// pristine-baseline failures and Red's recorded failures deselected"); ok is re-evaluated.
TestOutcome deselect(const TestOutcome& o, const std::set<std::string>& deselected);

/// d' with the repairer's edits to protected paths (RepoSpec::protected_paths) undone: a protected
/// file keeps its version in the PR diff `pr_diff` (or pristine when the PR does not touch it).
std::string strip_protected(const std::string& fix_diff, const std::string& pr_diff, const RepoSpec& spec);

/// Scores a fix diff d' (pristine -> Blue's files) against pub(C) and the sealed tests, after
/// strip_protected().
TurnScore score_fix(const PreparedRepo& repo, const PublicBundle& pub, const SealedBundle& sealed,
                    const std::string& fix_diff, const std::string& scratch_dir);

/// The prompt Blue (and session C) receives: repo, language, spec, the full PR diff, the feature test
/// code, the existing-test command and how to run the feature tests. Never any sealed field.
std::string blue_prompt(const PreparedRepo& repo, const PublicBundle& pub);

/// One Blue defense: a fresh workspace with pub(C), a session of `agent`, d', score.
struct DefenseResult {
  bool completed = false;    // false: the harness failed (policy error); dropped without credit
  TurnScore score;
  std::string fix_diff;
  SessionResult session;
};
DefenseResult run_defense(Agent& agent, const SessionContext& ctx, const PreparedRepo& repo, const PublicBundle& pub,
                          const SealedBundle& sealed, const ProtocolConfig& config);

/// One Red attempt: sessions A, B, C with their gates. On success `task`, `pub`, `sealed` are filled.
struct AttemptResult {
  bool admitted = false;
  AttemptRecord record;      // status, kind, first failing gate, gate log, trajectories
  TaskRecord task;
  PublicBundle pub;
  SealedBundle sealed;
};
/// `earlier` lists the pool's earlier admitted tasks (the diversity block of session A).
AttemptResult run_red_attempt(Agent& agent, const std::string& red_id, const PreparedRepo& repo, int slot, int attempt,
                              const std::vector<PublicBundle>& earlier, const ProtocolConfig& config);

/// Fills `red_id`'s slots on every repository: for each open slot, attempts until one is admitted or
/// attempts_per_slot have failed (the slot is then exhausted and never regenerated). Resumable: attempts
/// already in the bank count. Every attempt is recorded in the bank.
void generate_bank(TaskBank& bank, Agent& agent, const std::string& red_id, const std::vector<PreparedRepo>& repos,
                   const ProtocolConfig& config);

}  // namespace spade::evaldual
