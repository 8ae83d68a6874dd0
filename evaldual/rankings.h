// The SWE-Duel leaderboard: every rating of a list of match records, in the reference's rankings JSON
// (reference §6 "rankings JSON"; paper §3.5 and Table 1). Used by `spade duel rate`.
//
// compute_rankings() rates the matches as follows (each piece documented in its own header):
//   - participants: every id in the matches (plus RankingOptions::participants), sorted by id;
//   - points = wins + draws / 2 (ours: the reference names the field, not its formula); W/D/L counts;
//   - bradley_terry: MM fit on all matches (bradley_terry.h), bootstrap CI (bootstrap.h); the table's
//     rank is the BT rank (paper Table 1 is sorted by BT log-strength). Each BT value carries its
//     status (bradley_terry.h BtStatus: identified, capped, above, below, between, apart, no_games)
//     and, with a bootstrap, the draws in which it had no finite MLE and whether its interval is
//     therefore valid (bootstrap.h ci_identified());
//   - every rank (BT, Elo, TrueSkill, contested BT) is a standard competition rank: equal values share
//     a rank and the next rank skips ("1, 1, 3"; bradley_terry.h rank_by_score() says why); rows are
//     listed by rank, ties by id;
//   - elo: replayed in match-time order (elo.h, match_time_order()), CI from the same bootstrap draws;
//   - trueskill: replayed in the same match-time order (trueskill.h); rank by mu - 3 sigma, ties by id;
//   - bootstrap_median_rank, rank_interval, rank_histogram: from the match bootstrap;
//   - when any match carries turns: contested_bt, a BT fit on contested turns only (each a comparison
//     Red vs Blue, the turn's winner scoring 1; paper Appendix N "turn-level BT refit") with its own
//     bootstrap over contested turns (seed + 1); red_elo / blue_elo from role_elo() over all turns
//     (missing-task auto-wins included: the paper's full schedule). Without turns these are null.
//
// JSON (keys as in the reference; our additions marked +):
//   {"tournament_id", "format", "exported_at", "repos" (if set), "targets_per_repo" (if set),
//    "bootstrap" +: {"samples", "seed", "unconverged"},
//    "rankings": [{"rank", "participant" +, "model", "harness", "effort", "provider", "points",
//                  "matches_played", "wins" +, "draws" +, "losses" +,
//                  "bradley_terry": {"score", "rank", "ci": [lo, hi] | null, "status" +,
//                                    "unidentified_draws" + (with a bootstrap), "ci_identified" + (with a ci)},
//                  "elo": {"rating", "rank", "ci": [lo, hi] | null},
//                  "trueskill": {"mu", "sigma", "score" (mu - 3 sigma), "rank"} | null (null only in
//                               documents written before the field existed),
//                  "red_elo" + | null, "blue_elo" + | null,
//                  "contested_bt": {"score", "rank", "ci", "status" +, ...as bradley_terry} | null,
//                  "bootstrap_median_rank" | null, "rank_interval": [lo, hi] | null,
//                  "rank_histogram": [draws at rank 1, 2, ...] (empty without bootstrap)}],
//    "head_to_head": [{"model_a", "model_b", "a_wins", "b_wins", "draws", "matches"}],  // model_a < model_b
//    "matches": [match records, match_record.h form]}
// BT scores are natural-log strengths centred at 0 (paper §3.5).
//
// Thread-safety: plain value types and pure functions; thread-safe.
#pragma once
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "evaldual/bootstrap.h"
#include "evaldual/bradley_terry.h"
#include "evaldual/elo.h"
#include "evaldual/trueskill.h"
#include "evaldual/match_record.h"
#include "evaldual/participant.h"

namespace spade::evaldual {

/// Settings of compute_rankings(). Defaults: reference §6.
struct RankingOptions {
  std::string tournament_id;
  std::string format = "round_robin";   // "round_robin", "active_sampling", "swiss", "imported", ...
  std::string exported_at;              // ISO 8601 UTC; empty -> now
  nlohmann::json repos;                 // copied to the JSON when not null
  std::optional<int> targets_per_repo;  // copied to the JSON when set
  std::vector<std::string> participants;  // extra ids to list even without matches
  int bootstrap_samples = 1000;         // 0 disables every CI, histogram and median rank; < 0 is an error
  uint64_t seed = 42;
  BtOptions bt;
  EloOptions elo;
  TrueSkillOptions trueskill;
};

/// A rating with its rank and optional 95% bootstrap interval.
struct RatedValue {
  double value = 0;   // BT log-strength, or Elo rating
  int rank = 0;       // 1-based standard competition rank (ties share it)
  std::optional<std::pair<double, double>> ci;
  std::optional<BtStatus> status;  // BT values only (absent in documents written before the field)
  int unidentified_draws = 0;      // BT with a bootstrap: draws without a finite MLE (bootstrap.h)

  /// False when the interval is not that of a finite rating (bootstrap.h ci_identified()).
  bool ci_valid(int samples) const { return !ci || ci_identified(unidentified_draws, samples); }
};

/// A TrueSkill rating with its rank (trueskill.h).
struct TrueSkillValue {
  double mu = 25.0;
  double sigma = 25.0 / 3.0;
  double score = 0;  // mu - 3 sigma, the ranking key
  int rank = 0;      // 1-based by score descending, ties by id
};

/// One row of the leaderboard.
struct RankingEntry {
  int rank = 0;  // == bradley_terry.rank
  Participant participant;
  double points = 0;
  int matches_played = 0, wins = 0, draws = 0, losses = 0;
  RatedValue bradley_terry;
  RatedValue elo;
  std::optional<TrueSkillValue> trueskill;  // always set by compute_rankings()
  std::optional<double> red_elo, blue_elo;
  std::optional<RatedValue> contested_bt;
  std::optional<double> bootstrap_median_rank;
  std::optional<std::pair<int, int>> rank_interval;
  std::vector<int> rank_histogram;
};

/// Results of one pair of participants (model_a < model_b by id).
struct HeadToHead {
  std::string model_a, model_b;
  int a_wins = 0, b_wins = 0, draws = 0, matches = 0;
};

/// The whole leaderboard.
struct Rankings {
  std::string tournament_id, format, exported_at;
  nlohmann::json repos;  // null when unset
  std::optional<int> targets_per_repo;
  int bootstrap_samples = 0;
  uint64_t seed = 0;
  int bootstrap_unconverged = 0;  // bootstrap draws (both bootstraps) whose BT fit hit the cap
  std::vector<RankingEntry> rankings;  // by rank
  std::vector<HeadToHead> head_to_head;
  std::vector<MatchRecord> matches;  // as given
};

/// Rates `matches` (see the file comment). Throws spade::Error on an invalid participant id in
/// options.participants or a negative options.bootstrap_samples; the matches themselves are validated
/// by match_record.h's parsers.
Rankings compute_rankings(const std::vector<MatchRecord>& matches, const RankingOptions& options = {});

/// Serialises to the rankings JSON above.
nlohmann::json rankings_to_json(const Rankings& r);
/// Parses rankings_to_json()'s form; rankings_to_json(rankings_from_json(j)) == j for such j.
/// Throws spade::Error naming `source`, the field and what was expected on a malformed document, and
/// saying so (with the command that rates it) when `j` is a match list rather than rankings.
Rankings rankings_from_json(const nlohmann::json& j, const std::string& source);

/// Rating uncertainty per participant id: the width of its BT bootstrap CI (0 without one; +infinity
/// when the interval is not identified, bootstrap.h ci_identified()), the tie-break input of
/// active_sampling_candidates() (schedule.h).
std::map<std::string, double> rating_uncertainty(const Rankings& r);

/// A plain-text table (rank, participant, BT score [CI], Elo, W-D-L, median rank, note) for
/// terminals; the note column marks BT values and intervals that are not valid ratings, explained in
/// lines after the table (rankings_notes()).
std::string rankings_table(const Rankings& r);

/// The explanations behind the marks of a leaderboard, one sentence each, in a fixed order: what a
/// shared rank means (when a rank is shared), then one line per BT status other than identified that
/// occurs (bt_status_meaning()), one for intervals without a finite MLE in too many draws, and one for
/// intervals every draw agreed on. Empty for a leaderboard of valid, distinct ratings.
std::vector<std::string> rankings_notes(const Rankings& r);

/// The mark of one BT value in reports: "" for a valid rating, else a short tag ("not identified:
/// never lost", "capped", ...), and of its interval ("" or "interval not identified in K of B draws").
std::string bt_value_mark(const RatedValue& v);
std::string bt_interval_mark(const RatedValue& v, int samples);

}  // namespace spade::evaldual
