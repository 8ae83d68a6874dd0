// The SWE-Duel late entrant as a function (paper §3.4, Appendix S; reference §6 "late entrant"): used by
// `spade duel enter` (apps/cmd_duel_board.cpp) and by the duel watcher (apps/duel_watch.h).
//
// An entrant joins a leaderboard directory (evaldual/leaderboard_dir.h): it builds its own bank (Red
// sessions on the leaderboard's repositories), then plays ceil(log2 M)+1 matches clamped to [3, M]
// (M incumbents) against incumbents picked one at a time by active sampling (evaldual/schedule.h), on
// the incumbents' banks and earlier results, which it never changes; then the whole leaderboard is
// re-rated and rankings.json and the page rewritten. Incumbents play as their records say (a stored
// replay script, else their source id). Everything is built under the leaderboard's work/ folder and
// published only when the last match is done (bank, matches, script, then the participant record, the
// commit point), so an entry killed at any point resumes without replaying finished Red attempts and
// matches, and a leaderboard never shows half an entry.
//
// Thread-safety: one call at a time per leaderboard (it takes the leaderboard's lock for the whole call).
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "evaldual/arena.h"
#include "evaldual/match_record.h"
#include "evaldual/protocol.h"
#include "evaldual/rankings.h"

namespace spade::apps {

/// Makes the agent of a participant from its source id (checkpoint:DIR, an endpoint's model id, any
/// participant id) and its replay script path ("" when none). `script_flag` names where a script would
/// come from, for errors. Throws spade::Error when the participant cannot be played.
using AgentFactory = std::function<std::unique_ptr<evaldual::Agent>(
    const std::string& source, const std::string& script, const std::string& script_flag)>;

struct EnterRequest {
  std::string dir;         // the leaderboard directory (LeaderboardDir::is_leaderboard)
  std::string source;      // the entrant's source id (a checkpoint directory is named checkpoint:ABS_DIR)
  std::string name;        // the entrant's participant id on the leaderboard
  std::string script;      // its replay script, or ""
  int attempts = 3;        // Red attempts per slot (protocol.h ProtocolConfig::attempts_per_slot)
  int workers = 5;         // turns played at once (duel_match.h MatchConfig::workers)
  int bootstrap = 1000;    // bootstrap draws of the re-rating (rankings.h)
  uint64_t seed = 42;      // seed of the active sampling and of the bootstrap
  bool allow_first = false;  // with no incumbent: enter with the bank alone and no match (a run's
                             // leaderboard's first opponent); else no incumbent is an error
  AgentFactory agent_for;  // required
  const evaldual::Arena* arena = nullptr;  // an arena file's Red attempts and harness limits (they replace
                                           // `attempts`); null: `attempts` and harness.h's defaults
};

struct EnterResult {
  std::vector<evaldual::MatchRecord> played;  // the entrant's matches, as published
  evaldual::Rankings rankings;                // the leaderboard re-rated after the entry
  int admitted_tasks = 0;                     // tasks in the entrant's bank
  double match_seconds = 0;                   // wall seconds of the matches played by this call
  int matches_played_now = 0;                 // matches this call played (a resumed entry skips some)
};

/// Enters `r.name` (see the file comment); progress lines go to `log`. Throws spade::Error naming the
/// leaderboard when it is not one, the name is already on it, it has no incumbent (unless allow_first),
/// another process holds its lock, or a participant cannot be played.
EnterResult enter_leaderboard(const EnterRequest& r, const std::function<void(const std::string&)>& log);

}  // namespace spade::apps
