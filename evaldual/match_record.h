// SWE-Duel match records in the reference's matches[] JSON form (reference §1 MatchResult, §6 rankings
// JSON), the exchange format between the match runner and the ratings layer (`spade duel rate`).
//
// One match, as JSON (keys beyond the first four are optional):
//   {"match_id": "m-0001",
//    "model_a": "gpt-5.5#codex", "model_b": "kimi-k2.7#mini-swe-agent",   // Participant ids
//    "outcome": "a_wins" | "b_wins" | "draw",
//    "timestamp": "2026-05-01T12:00:00Z",   // ISO 8601 UTC, one format throughout; orders Elo updates
//    "score_a": 17, "score_b": 13,          // match scores Q_A, Q_B (paper §3.4)
//    "turns": [{"red": "<id>", "blue": "<id>", "repo": "cjson", "task_id": "...",
//               "blue_composite": 1,        // S_Blue (reference §3: product of T_e, T_f, T_b scores)
//               "auto_win": false,          // true: missing Red task scored as a Blue win, not contested
//               ...any other keys (s_regression, s_feature, s_bugfix, reason, cost) are kept...}],
//    ...any other keys are kept...}
// A turn's winner is Blue iff blue_composite == 1, else Red (paper §3.4: "one point to Blue if
// S_Blue = 1 and to Red otherwise"). A file holds either a JSON array of matches or an object with a
// "matches" array (a rankings JSON or a tournament export), so exported rankings can be re-rated.
// Unknown keys are preserved in `extra` and written back, so records round-trip unchanged.
//
// Thread-safety: plain value types; the functions are pure (load_matches reads one file) and thread-safe.
#pragma once
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace spade::evaldual {

/// A match outcome from model_a's point of view.
enum class Outcome { kAWins, kBWins, kDraw };

/// "a_wins" | "b_wins" | "draw".
const char* outcome_name(Outcome o);
/// Parses outcome_name()'s strings; throws spade::Error naming `where` and the accepted values otherwise.
Outcome parse_outcome(const std::string& s, const std::string& where);
/// model_a's score in a match: 1 (a wins), 0.5 (draw: half a win each, paper §3.5), 0 (b wins).
double outcome_score_a(Outcome o);

/// One turn of a match: `blue` repairs a task written by `red` on one repository.
struct TurnRecord {
  std::string red;              // Participant id of the task author
  std::string blue;             // Participant id of the repairer
  std::string repo;             // repository name; may be empty
  std::string task_id;          // task (challenge) id; may be empty
  double blue_composite = 0.0;  // S_Blue in [0, 1]
  bool auto_win = false;        // missing Red task: synthetic Blue win (reference §3, red_missing_challenge)
  nlohmann::json extra = nlohmann::json::object();  // other keys, kept verbatim

  /// True iff Blue won the turn (S_Blue == 1).
  bool blue_wins() const { return blue_composite >= 1.0; }
  /// True unless the turn is a missing-task auto-win (paper §3.4 "contested" turns).
  bool contested() const { return !auto_win; }
};

/// One match between two participants.
struct MatchRecord {
  std::string match_id;
  std::string model_a;   // canonical Participant id
  std::string model_b;   // canonical Participant id, != model_a
  Outcome outcome = Outcome::kDraw;
  std::string timestamp;              // may be empty
  std::optional<double> score_a;      // Q_A
  std::optional<double> score_b;      // Q_B
  std::vector<TurnRecord> turns;      // empty when the record has no turn detail
  nlohmann::json extra = nlohmann::json::object();  // other keys, kept verbatim
};

/// Serialises one turn / match in the form above (optional fields only when set).
nlohmann::json turn_to_json(const TurnRecord& t);
nlohmann::json match_to_json(const MatchRecord& m);
nlohmann::json matches_to_json(const std::vector<MatchRecord>& ms);  // a JSON array

/// Parses one match. `where` names it in errors (e.g. "matches.json: matches[3]"). Participant ids are
/// canonicalised. Throws spade::Error naming `where` and the key when a required key is missing or has
/// the wrong type, the outcome is unknown, model_a == model_b, a turn's {red, blue} is not
/// {model_a, model_b}, or blue_composite is outside [0, 1].
MatchRecord match_from_json(const nlohmann::json& j, const std::string& where);

/// Parses a document: an array of matches or an object with a "matches" array. `source` names the
/// document in errors. Throws spade::Error as match_from_json, and on duplicate match_ids.
std::vector<MatchRecord> matches_from_json(const nlohmann::json& doc, const std::string& source);

/// Reads and parses a file (see matches_from_json). Throws spade::Error naming the path when it cannot
/// be read or is not valid JSON (with the line and column).
std::vector<MatchRecord> load_matches(const std::string& path);

/// Indices of `ms` in match-time order: by timestamp (stable) when every record has one, else file
/// order (reference §6: "Elo ... by match time"). Timestamps compare as strings, so they must share one
/// ISO 8601 format.
std::vector<size_t> match_time_order(const std::vector<MatchRecord>& ms);

}  // namespace spade::evaldual
