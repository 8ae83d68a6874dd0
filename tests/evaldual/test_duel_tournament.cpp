// The resumable tournament driver (evaldual/tournament.h). Matches are "played" by a deterministic
// function of the pair (the lower id wins), so that what is under test is the driver: the schedule is
// followed, every record is saved, a run killed by an exception resumes where it stopped without
// replaying a match, and the result equals that of an uninterrupted run. Expected counts by hand:
// 4 participants -> 4*3/2 = 6 round-robin matches; a late entrant against 4 incumbents plays
// ceil(log2 4) + 1 = 3 (schedule.h active_sampling_budget).
#include <gtest/gtest.h>

#include <filesystem>
#include <set>

#include "common/atomic_file.h"
#include "common/error.h"
#include "duel_test_util.h"
#include "evaldual/tournament.h"

using namespace spade::evaldual;
using spade::evaldual::testing::fresh_dir;

namespace {

MatchRecord lower_id_wins(const ScheduledMatch& s) {
  MatchRecord r;
  r.match_id = s.match_id;
  r.model_a = s.a;
  r.model_b = s.b;
  r.outcome = s.a < s.b ? Outcome::kAWins : Outcome::kBWins;
  return r;
}

// Plays like lower_id_wins but throws (a crash) when the call count reaches `crash_at` (1-based).
struct CrashingPlayer {
  int calls = 0, crash_at = 0;
  std::vector<std::string> played;
  MatchRecord operator()(const ScheduledMatch& s) {
    if (++calls == crash_at) throw std::runtime_error("killed");
    played.push_back(s.match_id);
    return lower_id_wins(s);
  }
};

std::string dump(const std::vector<MatchRecord>& ms) { return matches_to_json(ms).dump(); }

const std::vector<std::string> kFour = {"A", "B", "C", "D"};

}  // namespace

TEST(DuelTournament, RoundRobinPlaysEveryPairOnce) {
  std::string dir = fresh_dir("rr_once");
  std::vector<MatchRecord> ms = run_tournament(dir, make_round_robin_state("t", kFour), lower_id_wins);
  ASSERT_EQ(ms.size(), 6u);
  std::set<std::pair<std::string, std::string>> pairs;
  for (const MatchRecord& m : ms) pairs.insert(std::minmax(m.model_a, m.model_b));
  EXPECT_EQ(pairs.size(), 6u);
  EXPECT_EQ(dump(load_matches(dir + "/matches.json")), dump(ms));
  EXPECT_EQ(next_pending(load_tournament_state(dir + "/state.json")), nullptr);
  // A second call finds nothing to do and plays nothing.
  CrashingPlayer none;
  EXPECT_EQ(dump(run_tournament(dir, make_round_robin_state("t", kFour), std::ref(none))), dump(ms));
  EXPECT_EQ(none.calls, 0);
}

TEST(DuelTournament, KilledRunResumesWithoutReplaying) {
  std::string clean = fresh_dir("rr_clean"), dir = fresh_dir("rr_killed");
  std::vector<MatchRecord> uninterrupted = run_tournament(clean, make_round_robin_state("t", kFour), lower_id_wins);

  CrashingPlayer first{0, 4, {}};  // dies during the 4th match
  EXPECT_THROW(run_tournament(dir, make_round_robin_state("t", kFour), std::ref(first)), std::runtime_error);
  EXPECT_EQ(load_matches(dir + "/matches.json").size(), 3u);
  CrashingPlayer second;
  std::vector<MatchRecord> resumed = run_tournament(dir, make_round_robin_state("t", kFour), std::ref(second));
  EXPECT_EQ(second.calls, 3);  // the 3 remaining matches only
  EXPECT_EQ(dump(resumed), dump(uninterrupted));
}

TEST(DuelTournament, SavedButUnmarkedMatchIsNotReplayed) {
  // The crash window between the two writes: matches.json has the record, state.json not the mark.
  std::string dir = fresh_dir("rr_window");
  TournamentState s = make_round_robin_state("t", kFour);
  save_tournament_state(dir + "/state.json", s);
  const ScheduledMatch first = *next_pending(s);
  spade::write_file_atomic(dir + "/matches.json", matches_to_json({lower_id_wins(first)}).dump());
  CrashingPlayer p;
  std::vector<MatchRecord> ms = run_tournament(dir, s, std::ref(p));
  EXPECT_EQ(ms.size(), 6u);
  EXPECT_EQ(p.calls, 5);
  for (const std::string& id : p.played) EXPECT_NE(id, first.match_id);
}

TEST(DuelTournament, LateEntrantByActiveSamplingResumes) {
  std::vector<MatchRecord> rr = run_tournament(fresh_dir("rr_prior"), make_round_robin_state("rr", kFour), lower_id_wins);
  TournamentOptions o;
  o.prior_matches = rr;
  std::vector<MatchRecord> clean = run_tournament(fresh_dir("late_clean"), make_late_entrant_state("late", "E", kFour),
                                                  lower_id_wins, o);
  ASSERT_EQ(clean.size(), 3u);
  std::set<std::string> opponents;
  for (const MatchRecord& m : clean) {
    EXPECT_EQ(m.model_a, "E");
    opponents.insert(m.model_b);
  }
  EXPECT_EQ(opponents.size(), 3u);  // never the same incumbent twice while unplayed pairs remain

  std::string dir = fresh_dir("late_killed");
  CrashingPlayer first{0, 2, {}};
  EXPECT_THROW(run_tournament(dir, make_late_entrant_state("late", "E", kFour), std::ref(first), o), std::runtime_error);
  CrashingPlayer second;
  std::vector<MatchRecord> resumed = run_tournament(dir, make_late_entrant_state("late", "E", kFour), std::ref(second), o);
  EXPECT_EQ(second.calls, 2);
  EXPECT_EQ(dump(resumed), dump(clean));
}

TEST(DuelTournament, RefusesAnotherTournamentsDirectoryAndAWrongRecord) {
  std::string dir = fresh_dir("rr_other");
  run_tournament(dir, make_round_robin_state("t", kFour), lower_id_wins);
  EXPECT_THROW(run_tournament(dir, make_round_robin_state("t", {"A", "B", "C"}), lower_id_wins), spade::Error);
  auto wrong_id = [](const ScheduledMatch& s) {
    MatchRecord r = lower_id_wins(s);
    r.match_id = "other";
    return r;
  };
  EXPECT_THROW(run_tournament(fresh_dir("rr_wrong"), make_round_robin_state("t", kFour), wrong_id), spade::Error);
}
