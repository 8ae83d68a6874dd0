// The arena file (issue 20): what a run's duel scoring plays on, named by the run config's duel.arena
// (trainer/config.h DuelYaml) and read by `spade duel watch`. YAML:
//   repos: [repos/cjson.yaml, repos/toolz.yaml]  # required: repository specs (repo_spec.h), relative
//                                                # to the arena file (or absolute)
//   turns_per_player: 1   # tasks per repository per side in a match (duel_match.h MatchConfig; the
//                         # reference banks 1 target per repository, reference §7), = slots per repository
//   attempts_per_slot: 5  # Red attempts per slot (protocol.h ProtocolConfig; reference §3: 5)
//   workers: 5            # turns played at once (duel_match.h MatchConfig; reference §7: 5 workers)
//   step_limit: 50        # the harness's limits for Red and Blue sessions (harness.h HarnessConfig,
//   recovery_turns: 3     # reference §5 / arena.yaml: 50 steps, 3 x 6 recovery steps, 1800 s)
//   recovery_steps: 6
//   wall_clock_s: 1800
// Unknown keys are errors naming the key and the file.
//
// Thread-safety: plain values and pure functions (load_arena reads one file).
#pragma once
#include <string>
#include <vector>

#include "evaldual/harness.h"
#include "evaldual/leaderboard_dir.h"
#include "evaldual/protocol.h"

namespace spade::evaldual {

struct Arena {
  std::string path;                   // where it was read from, for messages
  std::vector<std::string> specs;     // absolute, normalised repo spec paths
  int turns_per_player = 1;
  int attempts_per_slot = 5;
  int workers = 5;
  HarnessConfig harness;              // step_limit, recovery_turns, recovery_steps, wall_clock_s
};

/// `a`'s attempts and harness limits in `p` (both Red and Blue harnesses).
void apply_arena(const Arena& a, ProtocolConfig* p);

/// Parses arena YAML `text`; relative spec paths are resolved against `base_dir`. Throws spade::Error
/// naming `origin` and the key for invalid YAML, unknown keys, no repos, numbers below 1.
Arena parse_arena(const std::string& text, const std::string& origin, const std::string& base_dir);

/// Reads and parses `path` (relative specs against its folder); also checks each spec file exists and
/// loads (repo_spec.h). Throws like parse_arena, or naming the spec that does not load.
Arena load_arena(const std::string& path);

/// The leaderboard arena of `a`: the specs' repository names (loaded), the specs, turns_per_player.
LeaderboardArena leaderboard_arena(const Arena& a);

}  // namespace spade::evaldual
