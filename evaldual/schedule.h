// Tournament schedules for SWE-Duel: the round robin (paper §3.4, "every pair of participants plays one
// match"; reference §6 "circle method; odd N adds a bye") and the active-sampling late entrant (paper
// §3.4 and Appendix S: a newcomer to a finished tournament of M participants plays ceil(log2 M) + 1
// incumbents chosen by Chatbot Arena's active sampling rule, Chiang et al. 2024; reference §6), with a
// resumable state file so that a killed tournament continues where it stopped.
//
// Thread-safety: pure functions on plain values, thread-safe; save/load touch only the path given
// (concurrent writers of one path: last rename wins).
#pragma once
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "evaldual/match_record.h"

namespace spade::evaldual {

// ------------------------------------------------------------------------------ round robin

/// One round: disjoint pairs, plus the participant sitting out when N is odd.
struct Round {
  std::vector<std::pair<std::string, std::string>> pairs;
  std::string bye;  // empty when N is even
};

/// Round robin by the circle method (Berger tables): participant 0 stays fixed, the others rotate one
/// place per round; odd N adds a bye seat. N' = N rounded up to even gives N' - 1 rounds of N'/2 seats;
/// every pair meets exactly once. Round r pairs seat i with seat N'-1-i. Deterministic in the input
/// order. Throws spade::Error when there are fewer than 2 participants or a duplicate id.
std::vector<Round> round_robin_schedule(const std::vector<std::string>& participants);

// ------------------------------------------------------------------------------ active sampling

/// Gain given to a pair with no prior games ("unplayed pairs get a huge gain", reference §6): finite so
/// that it survives JSON.
constexpr double kUnplayedPairGain = 1e9;

/// Matches a late entrant plays: ceil(log2 M) + 1 clamped to [3, M] (paper §3.4; reference §6 "floor
/// 3, cap M"). M = 10 -> 5 (the paper's Gemini entrant). M <= 0 -> 0. Throws nothing.
int active_sampling_budget(int incumbents);

/// Laplace-smoothed win rate of one side over n prior games: (wins + 1) / (n + 2), draws counted as half
/// a win in `wins` (reference §6).
double laplace_win_rate(double wins, double games);

/// Expected reduction of the standard error of a pair's win-rate estimate from one more game:
/// sqrt(v/n) - sqrt(v/(n+1)), v = p(1-p) (Chatbot Arena active sampling; reference §6). n <= 0 gives
/// kUnplayedPairGain.
double active_sampling_gain(double p, double games);

/// One candidate opponent of the newcomer.
struct SamplingCandidate {
  std::string incumbent;
  double games = 0;        // prior games newcomer vs incumbent
  double p = 0.5;          // Laplace-smoothed newcomer win rate against it
  double gain = 0;         // active_sampling_gain(p, games)
  double uncertainty = 0;  // the incumbent's rating uncertainty (caller-supplied)
};

/// Candidates newcomer x incumbent, best first: gain descending, then higher rating uncertainty, then id
/// ascending (reference §6). Pairs that already played (in `matches`) or are in `exclude` are left out
/// unless `include_played` (then their gain is finite). `uncertainty` maps incumbent id -> e.g. the
/// width of its bootstrap BT CI (rankings.h rating_uncertainty()); missing ids count as 0. Throws
/// spade::Error when the newcomer is among the incumbents.
std::vector<SamplingCandidate> active_sampling_candidates(const std::string& newcomer,
                                                          const std::vector<std::string>& incumbents,
                                                          const std::vector<MatchRecord>& matches,
                                                          const std::map<std::string, double>& uncertainty,
                                                          const std::vector<std::string>& exclude = {},
                                                          bool include_played = false);

// ------------------------------------------------------------------------------ resumable state

/// One scheduled match.
struct ScheduledMatch {
  int round = 0;           // 1-based round (round robin); order of selection (active sampling)
  std::string a, b;        // participant ids; a plays as model_a
  std::string match_id;    // unique within the tournament
  bool done = false;
};

/// A tournament's schedule and progress, saved after every change (JSON, written atomically).
struct TournamentState {
  std::string tournament_id;
  std::string format;                     // "round_robin" or "active_sampling"
  std::vector<std::string> participants;  // all participants (incumbents + newcomer for active_sampling)
  std::vector<ScheduledMatch> schedule;
  std::string newcomer;                   // active_sampling only
  int budget = 0;                         // active_sampling only: matches the newcomer plays
};

/// A round-robin tournament's state: the whole circle-method schedule, nothing done. Match ids are
/// "<tournament_id>-r<round>-m<k>" (k 1-based within the round). Throws like round_robin_schedule().
TournamentState make_round_robin_state(const std::string& tournament_id, const std::vector<std::string>& participants);

/// A late-entrant tournament's state: budget from active_sampling_budget(incumbents.size()), schedule
/// empty (chosen one match at a time by next_late_entrant_match()). Throws spade::Error when the newcomer
/// is among the incumbents or an id repeats.
TournamentState make_late_entrant_state(const std::string& tournament_id, const std::string& newcomer,
                                        const std::vector<std::string>& incumbents);

/// The first scheduled match not done, or nullptr. The pointer is into `state` and valid until it changes.
const ScheduledMatch* next_pending(const TournamentState& state);

/// For an active_sampling state: the pending match if one is scheduled and not done (resume), else,
/// while fewer than `budget` matches are scheduled, schedules the best candidate (the newcomer as a,
/// match id "<tournament_id>-as<k>") given all `matches` played so far and the incumbents'
/// `uncertainty`, and returns it; nullopt when the budget is spent or no candidate is left.
/// Throws spade::Error when the state's format is not active_sampling.
std::optional<ScheduledMatch> next_late_entrant_match(TournamentState& state, const std::vector<MatchRecord>& matches,
                                                      const std::map<std::string, double>& uncertainty);

/// Marks `match_id` done. Throws spade::Error when it is not in the schedule.
void mark_done(TournamentState& state, const std::string& match_id);

nlohmann::json tournament_state_to_json(const TournamentState& state);
/// Throws spade::Error naming `source` and the key on a malformed document.
TournamentState tournament_state_from_json(const nlohmann::json& j, const std::string& source);
/// Writes the state with spade::write_file_atomic (a crash leaves the old or the new file). Throws
/// spade::Error on I/O failure.
void save_tournament_state(const std::string& path, const TournamentState& state);
/// Reads a state written by save_tournament_state. Throws spade::Error naming the path when it is
/// missing, not JSON, or malformed.
TournamentState load_tournament_state(const std::string& path);

}  // namespace spade::evaldual
