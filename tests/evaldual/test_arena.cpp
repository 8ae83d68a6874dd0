// evaldual/arena.h: the arena file of duel scoring.
#include <gtest/gtest.h>

#include "common/error.h"
#include "evaldual/arena.h"

namespace spade::evaldual {
namespace {

std::string error_of(const std::string& yaml) {
  try {
    parse_arena(yaml, "a.yaml", "/base");
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(Arena, ParsesWithDefaultsAndResolvesSpecsAgainstTheFile) {
  const Arena a = parse_arena("repos: [repos/x.yaml, /abs/y.yaml]\nworkers: 3\n", "a.yaml", "/base/duel");
  EXPECT_EQ(a.specs, (std::vector<std::string>{"/base/duel/repos/x.yaml", "/abs/y.yaml"}));
  EXPECT_EQ(a.turns_per_player, 1);   // duel_match.h MatchConfig default
  EXPECT_EQ(a.attempts_per_slot, 5);  // protocol.h ProtocolConfig default (reference §3)
  EXPECT_EQ(a.workers, 3);
  EXPECT_EQ(a.harness.step_limit, 50);  // harness.h defaults (reference §5)
  const Arena b = parse_arena("repos: [x.yaml]\nstep_limit: 4\nrecovery_turns: 0\nwall_clock_s: 60\n", "a.yaml", "/");
  ProtocolConfig p;
  apply_arena(b, &p);
  EXPECT_EQ(p.red_harness.step_limit, 4);
  EXPECT_EQ(p.blue_harness.step_limit, 4);
  EXPECT_EQ(p.blue_harness.recovery_turns, 0);
  EXPECT_EQ(p.red_harness.wall_clock_s, 60);
  EXPECT_EQ(p.attempts_per_slot, 5);
}

TEST(Arena, BadFilesNameTheKeyAndTheFile) {
  EXPECT_NE(error_of("repos: [x.yaml]\nturns: 3\n").find("a.yaml: unknown key 'turns'"), std::string::npos);
  EXPECT_NE(error_of("workers: 2\n").find("a.yaml: missing required key 'repos'"), std::string::npos);
  EXPECT_NE(error_of("repos: []\n").find("a.yaml: repos: empty"), std::string::npos);
  EXPECT_NE(error_of("repos: [x.yaml]\nworkers: 0\n").find("a.yaml: workers must be >= 1, got 0"), std::string::npos);
  EXPECT_NE(error_of("- a\n").find("a.yaml: an arena must be a YAML mapping"), std::string::npos);
}

// The shipped arenas load: every spec exists and parses.
TEST(Arena, TheShippedArenasLoad) {
  for (const char* name : {"arena-tiny.yaml", "arena.yaml"}) {
    const Arena a = load_arena(std::string(SPADE_SOURCE_DIR) + "/configs/duel/" + name);
    const LeaderboardArena la = leaderboard_arena(a);
    EXPECT_EQ(la.repos.size(), a.specs.size()) << name;
  }
  EXPECT_EQ(leaderboard_arena(load_arena(std::string(SPADE_SOURCE_DIR) + "/configs/duel/arena-tiny.yaml")).repos,
            std::vector<std::string>{"pyfix"});
}

}  // namespace
}  // namespace spade::evaldual
