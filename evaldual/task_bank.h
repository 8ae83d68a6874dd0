// The SWE-Duel task bank: one SQLite database (WAL journal) holding admitted tasks, every Red attempt
// with its gate log and session trajectories, slot states, and the defense cache (reference §1 "Task
// bank on disk"; §2 attempts and slots; §3 "Defense cache keyed by (challenge, Blue identity)").
//
// The public bundle pub(C) and the sealed part (bug tests, bug metadata, d_f) live in separate tables,
// each with the SHA-256 of its canonical JSON; loading re-hashes and refuses a row whose content
// changed. Blue-facing code reads only load_public().
//
// Tables: tasks(task_id, red, repo, slot, attempt, repo_pin, record_json, created_at),
//   public_bundles(task_id, json, sha256), sealed_bundles(task_id, json, sha256),
//   attempts(id, red, repo, slot, attempt, status, kind, gate, reason, created_at),
//   gate_logs(attempt_id, seq, gate, passed, detail), trajectories(attempt_id, session, json),
//   slots(red, repo, slot, state, task_id), defenses(task_id, blue, score_json, created_at).
//
// Thread-safety: a TaskBank is thread-safe (one connection, serialized by an internal mutex).
// Several processes may open the same file (WAL; writers wait up to 10 s).
#pragma once
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "evaldual/task.h"

struct sqlite3;

namespace spade::evaldual {

/// Slot lifecycle (reference §2: first pass admits; 5 failures exhaust the slot forever).
enum class SlotState { open, admitted, exhausted };
const char* slot_state_name(SlotState s);

/// One Red attempt (admitted or failed). Failed kinds (reference §1 FailedChallengeRecord):
/// feature-gate, validation, timeout-feature, timeout-bug, incomplete-feature, incomplete-bug.
struct AttemptRecord {
  std::string red, repo;
  int slot = 0, attempt = 0;
  std::string status;        // "admitted" | "failed"
  std::string kind;          // failure kind ("" when admitted)
  std::string gate;          // first failing gate ("" when none)
  std::string reason;
  std::vector<GateResult> gates;
  std::vector<std::pair<std::string, std::string>> trajectories;  // (session "A"|"B"|"C", JSON)
};

class TaskBank {
 public:
  /// Opens (creating if needed) the database at `path` and its schema. Throws spade::Error naming
  /// the path and SQLite's message on failure.
  explicit TaskBank(const std::string& path);
  ~TaskBank();
  TaskBank(const TaskBank&) = delete;
  TaskBank& operator=(const TaskBank&) = delete;

  /// Stores an admitted task (record + public + sealed, hashed) and marks its slot admitted, in one
  /// transaction. Throws spade::Error if the task id exists.
  void put_task(const TaskRecord& record, const PublicBundle& pub, const SealedBundle& sealed);
  /// Task ids of `red` on `repo` in bank order (slot, then attempt).
  std::vector<std::string> task_ids(const std::string& red, const std::string& repo) const;
  /// Loaders; throw spade::Error if the task is unknown or its stored hash does not match.
  TaskRecord load_record(const std::string& task_id) const;
  PublicBundle load_public(const std::string& task_id) const;
  SealedBundle load_sealed(const std::string& task_id) const;
  /// The stored SHA-256 of the public / sealed JSON.
  std::string public_hash(const std::string& task_id) const;
  std::string sealed_hash(const std::string& task_id) const;

  /// Appends an attempt with its gate log and trajectories; returns its row id.
  int64_t record_attempt(const AttemptRecord& a);
  /// Attempts recorded for a slot.
  int attempts_used(const std::string& red, const std::string& repo, int slot) const;
  /// Attempts of `red` on `repo` (all slots), in order.
  std::vector<AttemptRecord> attempts(const std::string& red, const std::string& repo) const;
  SlotState slot_state(const std::string& red, const std::string& repo, int slot) const;
  /// Slots `red` has on `repo` (open, admitted or exhausted): how many `bank generate --slots` made.
  int slot_count(const std::string& red, const std::string& repo) const;
  void set_slot_state(const std::string& red, const std::string& repo, int slot, SlotState s);

  /// One slot of a participant.
  struct Slot {
    std::string repo;
    int slot = 0;
    SlotState state = SlotState::open;
  };
  /// Every slot of `red` on any repository, by repository then slot.
  std::vector<Slot> slots(const std::string& red) const;

  /// Defense cache: a scored Blue run of `blue` on `task_id` (JSON of a TurnScore), if any.
  std::optional<std::string> cached_defense(const std::string& task_id, const std::string& blue) const;
  void put_defense(const std::string& task_id, const std::string& blue, const std::string& score_json);

  const std::string& path() const { return path_; }

 private:
  void exec(const std::string& sql) const;
  std::string path_;
  sqlite3* db_ = nullptr;
  mutable std::mutex mu_;
};

/// Copies `red`'s slots (with their states) and admitted tasks (record, public and sealed bundles;
/// hashes checked on load) from `from` into `to`: the part of a bank a match reads. Attempts, gate
/// logs, trajectories and cached defenses are not copied. Throws spade::Error when a task of `red`
/// already exists in `to` or a stored hash does not match. Used by the leaderboard directory
/// (leaderboard_dir.h) to give each participant its own bank and each match a bank of its two sides.
void copy_red_tasks(const TaskBank& from, TaskBank& to, const std::string& red);

}  // namespace spade::evaldual
