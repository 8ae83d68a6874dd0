// The leaderboard directory's layout rules (evaldual/leaderboard_dir.h) and the bank copy it rests on
// (task_bank.h copy_red_tasks), without playing anything: slugs that keep ids apart and inside their
// folder, a match record that is never overwritten, one writer at a time, a directory that holds
// something else refused, and a participant's tasks copied with their slots and hashes.
// The whole flow (tournament, enter, import) is tested end to end in tests/apps/test_duel_board.cpp.
#include <gtest/gtest.h>

#include <filesystem>

#include "common/atomic_file.h"
#include "common/error.h"
#include "evaldual/leaderboard_dir.h"
#include "evaldual/task_bank.h"
#include "tests/evaldual/duel_test_util.h"
#include "tests/testing/test_util.h"

namespace fs = std::filesystem;
using namespace spade::evaldual;
using spade::evaldual::testing::fresh_dir;

namespace {

LeaderboardArena arena() {
  LeaderboardArena a;
  a.repos = {"pyfix"};
  a.specs = {"/abs/pyfix.yaml"};
  a.turns_per_player = 1;
  return a;
}

MatchRecord match(const std::string& id, Outcome o) {
  MatchRecord m;
  m.match_id = id;
  m.model_a = "a#x";
  m.model_b = "b#x";
  m.outcome = o;
  return m;
}

}  // namespace

TEST(LeaderboardDir, SlugsKeepIdsApartAndInsideTheirFolder) {
  // "a#b" and "a_b" map to the same readable part; the hash suffix keeps them apart.
  EXPECT_NE(leaderboard_slug("a#b"), leaderboard_slug("a_b"));
  EXPECT_EQ(leaderboard_slug("a#b").substr(0, 4), "a_b-");
  for (const std::string id : {"../../etc/passwd", "/abs", ".hidden", "x/..", "checkpoint:/runs/x/step_10"}) {
    const std::string s = leaderboard_slug(id);
    EXPECT_EQ(s.find('/'), std::string::npos) << id;
    EXPECT_NE(s[0], '.') << id;
    EXPECT_EQ(s, leaderboard_slug(id));  // a pure function of the id
  }
}

TEST(LeaderboardDir, CreateRefusesForeignDirectoriesAndOtherArenas) {
  const std::string d = fresh_dir("board_foreign");
  spade::write_file_atomic(d + "/notes.txt", "mine");
  EXPECT_NE(spade::fixtures::error_of([&] { LeaderboardDir::create(d, arena()); }).find("neither empty nor a leaderboard"),
            std::string::npos);
  const std::string b = fresh_dir("board_arena");
  LeaderboardDir::create(b, arena());
  LeaderboardDir::create(b, arena());  // the same arena: opened
  LeaderboardArena other = arena();
  other.turns_per_player = 2;
  EXPECT_THROW(LeaderboardDir::create(b, other), spade::Error);
  EXPECT_THROW(LeaderboardDir::open(d), spade::Error);  // no leaderboard.json
}

TEST(LeaderboardDir, MatchRecordsAreNeverOverwritten) {
  const LeaderboardDir b = LeaderboardDir::create(fresh_dir("board_matches"), arena());
  b.put_match(match("enter:c#x-as1", Outcome::kAWins));
  b.put_match(match("enter:c#x-as1", Outcome::kAWins));  // the same content again: a resumed command
  EXPECT_THROW(b.put_match(match("enter:c#x-as1", Outcome::kBWins)), spade::Error);
  ASSERT_EQ(b.matches().size(), 1u);
  EXPECT_EQ(b.matches()[0].outcome, Outcome::kAWins);
  // A record under a file name that is not its id's slug is refused on reading.
  fs::copy_file(b.match_path("enter:c#x-as1"), b.root() + "/matches/renamed.json");
  EXPECT_THROW(b.matches(), spade::Error);
}

TEST(LeaderboardDir, OneWriterAtATime) {
  const std::string d = fresh_dir("board_lock");
  {
    LeaderboardLock first(d);
    EXPECT_THROW(LeaderboardLock second(d), spade::Error);  // flock: another open file description
  }
  LeaderboardLock again(d);  // released with the first
}

TEST(LeaderboardDir, InstallBankCopiesOneParticipantsTasksAndSlots) {
  const std::string d = fresh_dir("board_bank");
  const std::string shared = d + "/shared.sqlite";
  {
    TaskBank tb(shared);
    TaskRecord r;
    r.task_id = "t-alice";
    r.red = "alice#x";
    r.repo = "pyfix";
    r.slot = 1;
    r.attempt = 2;
    r.repo_pin = "sha256:abc";
    r.created_at = "2026-01-01T00:00:00Z";
    PublicBundle pub;
    pub.feature_spec = "spec";
    SealedBundle sealed;
    sealed.bug_description = "sealed";
    tb.put_task(r, pub, sealed);
    r.task_id = "t-bob";
    r.red = "bob#x";
    tb.put_task(r, pub, sealed);
    tb.set_slot_state("alice#x", "pyfix", 2, SlotState::exhausted);
  }
  const LeaderboardDir b = LeaderboardDir::create(d + "/board", arena());
  const std::string sha = b.install_bank(shared, "alice#x");
  EXPECT_EQ(sha, file_sha256(b.bank_path("alice#x")));
  EXPECT_THROW(b.install_bank(shared, "alice#x"), spade::Error);  // never replaced
  TaskBank own(b.bank_path("alice#x"));
  EXPECT_TRUE(own.task_ids("bob#x", "pyfix").empty());  // bob's task stays out
  EXPECT_EQ(own.task_ids("alice#x", "pyfix"), std::vector<std::string>{"t-alice"});
  EXPECT_EQ(own.slot_state("alice#x", "pyfix", 1), SlotState::admitted);
  EXPECT_EQ(own.slot_state("alice#x", "pyfix", 2), SlotState::exhausted);
  EXPECT_EQ(own.load_sealed("t-alice").bug_description, "sealed");
  TaskBank from(shared);
  EXPECT_EQ(own.public_hash("t-alice"), from.public_hash("t-alice"));
}
