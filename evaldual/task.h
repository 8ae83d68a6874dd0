// SWE-Duel tasks (the paper's C = (R, s, d, T_f, T_b), reference §1 RedChallenge/ChallengeRecord):
// the public bundle pub(C) that Blue receives, the sealed part that Blue never sees, and the record of
// how the task was made. JSON forms are what the task bank stores (evaldual/task_bank.h).
//
// Thread-safety: plain value types; the functions are pure and thread-safe.
#pragma once
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace spade::evaldual {

/// pub(C): what Blue and the blind self-reviewer (session C) receive (paper §3.2-3.3).
struct PublicBundle {
  std::string task_id;
  std::string repo;
  std::string language;
  std::string feature_spec;                  // s
  std::string exploration_summary;
  std::string feature_rationale;
  std::vector<std::string> target_files;
  std::string pr_diff;                       // d (pristine -> feature with the bug), no .duel/ paths
  std::map<std::string, std::string> feature_tests;  // T_f: workspace-relative path -> content
  std::vector<std::string> red_pre_existing_failures;  // test ids Red recorded as already failing
};

/// The sealed part: never in Blue's workspace, prompt or trajectory (paper §3: "T_b stays sealed").
struct SealedBundle {
  std::string bug_type;
  std::string bug_description;
  std::string bug_location;                  // path:LINE or path:START-END
  std::map<std::string, std::string> bug_tests;  // T_b: workspace-relative path -> content
  std::string feature_only_diff;             // d_f (pristine -> feature without the bug)
};

/// One outcome of a validation gate (reference §2 gate names).
struct GateResult {
  std::string gate;     // diff_valid | existing_tests | feature_tests | bug_tests | complexity | self_review
  bool passed = false;
  std::string detail;   // counts or the failure reason
};

/// How a task was made.
struct TaskRecord {
  std::string task_id;      // "<participant>::<repo>::slot<k>" made unique by the attempt number
  std::string red;          // Participant id of the author
  std::string repo;
  std::string repo_pin;     // PreparedRepo::pin at creation; a different pin makes the task stale
  int slot = 0;
  int attempt = 0;          // 1-based attempt that was admitted
  std::vector<GateResult> gates;
  double cost = 0.0;        // USD of the admitted attempt's sessions A, B and C
  int64_t tokens = 0;       // their prompt + completion tokens
  std::string created_at;   // ISO 8601 UTC
};

nlohmann::json to_json(const PublicBundle& b);
nlohmann::json to_json(const SealedBundle& b);
nlohmann::json to_json(const GateResult& g);
nlohmann::json to_json(const TaskRecord& r);
/// Inverse of to_json; missing keys take their defaults. Throw spade::Error on a wrong type.
PublicBundle public_from_json(const nlohmann::json& j);
SealedBundle sealed_from_json(const nlohmann::json& j);
TaskRecord record_from_json(const nlohmann::json& j);

/// Current UTC time as "YYYY-MM-DDTHH:MM:SSZ".
std::string utc_now_iso();

}  // namespace spade::evaldual
