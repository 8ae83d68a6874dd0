// The leaderboard directory end to end by the real binary (issue 20, "The leaderboard"): a round robin
// of three scripted participants published with `duel tournament --leaderboard`, a late entrant
// (`duel enter`) killed with kill -9 mid-way and resumed, and contributions moved with `duel export` /
// `duel import`, including a double import and hostile archives.
//
// Participants are replay scripts on the pyfix fixture repository. Every one makes the same Red task
// (tests/evaldual/fixtures/duel_scripts/pyfix_unique_slug.json: unique_slug, with a loop bug), and
// differs only in which Red owners' tasks its Blue sessions repair (the fix sed restores the loop).
// Expected counts by hand: 3 incumbents -> a round robin of 3*2/2 = 3 matches; the entrant plays
// ceil(log2 3)+1 = 3, clamped to [3, M=3] = 3 matches (paper §3.4, reference §6), one per incumbent
// (active sampling gives unplayed pairs the top gain, so no incumbent twice while one is unplayed).
#include <gtest/gtest.h>
#include <archive.h>
#include <archive_entry.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <string>
#include <thread>

#include "common/atomic_file.h"
#include "evaldual/diff.h"
#include "evaldual/input_fields.h"
#include "evaldual/leaderboard_dir.h"
#include "evaldual/match_record.h"
#include "tests/testing/chromium_page.h"
#include "tests/testing/test_util.h"

namespace fs = std::filesystem;
namespace ev = spade::evaldual;
using nlohmann::json;

namespace {

const std::string kSpec = std::string(SPADE_SOURCE_DIR) + "/tests/evaldual/fixtures/repos/pyfix.yaml";
const std::string kRedScript = std::string(SPADE_SOURCE_DIR) + "/tests/evaldual/fixtures/duel_scripts/pyfix_unique_slug.json";
const std::vector<std::string> kIncumbents = {"alice#replay", "bob#replay", "carol#replay"};
const std::string kEntrant = "dave#replay";

spade::fixtures::CommandResult spade_cmd(const std::string& args) {
  return spade::fixtures::run_command(std::string(SPADE_BIN) + " " + args + " 2>&1");
}

bool has(const spade::fixtures::CommandResult& r, const std::string& s) { return r.out.find(s) != std::string::npos; }

// A participant's replay script: the shared Red sessions, plus a Blue repair (prefixed by `blue_prefix`)
// of the tasks of each owner in `repairs`; other Blue sessions submit nothing (an empty fix: Red wins).
std::string write_script(const std::string& path, const std::vector<std::string>& repairs,
                         const std::string& blue_prefix = "") {
  json j = ev::read_json_document(kRedScript);
  const std::string fix = j["pyfix/red_c/s1/a1"][0];
  for (const std::string& red : repairs) j["pyfix/blue/" + red + "/s1"] = {blue_prefix + fix};
  spade::write_file_atomic(path, j.dump(1));
  return path;
}

// Every file under `dir` (relative path -> SHA-256 of its bytes), skipping work/ and the lock.
std::map<std::string, std::string> tree(const std::string& dir) {
  std::map<std::string, std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    const std::string rel = fs::relative(e.path(), dir).string();
    if (!e.is_regular_file() || rel.rfind("work/", 0) == 0 || rel == ".lock") continue;
    out[rel] = ev::sha256_hex(spade::read_file(e.path().string()));
  }
  return out;
}

std::map<std::string, std::string> only(const std::map<std::string, std::string>& t, const std::string& prefix) {
  std::map<std::string, std::string> out;
  for (const auto& [k, v] : t)
    if (k.rfind(prefix, 0) == 0) out[k] = v;
  return out;
}

class DuelBoard : public ::testing::Test {
 protected:
  // One round robin of the three incumbents, published as a leaderboard; each test works on a copy.
  static void SetUpTestSuite() {
    // ctest runs each test in its own process, possibly at once: one suite directory per process.
    root_ = spade::fixtures::fresh_test_dir("duel_board", "suite-" + std::to_string(getpid()));
    const std::string work = root_ + "/work";
    std::map<std::string, std::vector<std::string>> repairs = {
        {"alice#replay", {"bob#replay", "carol#replay", kEntrant}}, {"bob#replay", {}}, {"carol#replay", {"alice#replay"}}};
    auto setup = spade_cmd("duel repos setup --spec " + kSpec + " --work " + work);
    ASSERT_EQ(setup.rc, 0) << setup.out;
    std::string scripts;
    for (const std::string& id : kIncumbents) {
      const std::string script = write_script(root_ + "/" + id.substr(0, id.find('#')) + ".json", repairs[id]);
      auto r = spade_cmd("duel bank generate --participant " + id + " --script " + script + " --spec " + kSpec +
                         " --work " + work);
      ASSERT_EQ(r.rc, 0) << r.out;
      scripts += " --participant " + id + " --script " + id + "=" + script;
    }
    auto r = spade_cmd("duel tournament" + scripts + " --spec " + kSpec + " --work " + work + " --leaderboard " +
                       board() + " --bootstrap 50 --workers 2");
    ASSERT_EQ(r.rc, 0) << r.out;
    ASSERT_TRUE(has(r, "leaderboard " + board() + ": 3 participants, 3 matches")) << r.out;
  }

  static std::string board() { return root_ + "/board"; }

  // A private copy of the suite's leaderboard.
  static std::string copy_board(const std::string& name) {
    const std::string d = spade::fixtures::fresh_test_dir("duel_board", name + "-" + std::to_string(getpid()));
    fs::copy(board(), d + "/board", fs::copy_options::recursive);
    return d;
  }

  static std::string root_;
};
std::string DuelBoard::root_;

// A tar archive of `entries`: (path, kind, content or link target), kind 'f' file, 'l' symlink, 'h' hardlink.
void write_tar(const std::string& path, const std::vector<std::tuple<std::string, char, std::string>>& entries) {
  struct archive* a = archive_write_new();
  archive_write_set_format_pax_restricted(a);
  ASSERT_EQ(archive_write_open_filename(a, path.c_str()), ARCHIVE_OK);
  for (const auto& [name, kind, data] : entries) {
    struct archive_entry* e = archive_entry_new();
    archive_entry_set_pathname(e, name.c_str());
    archive_entry_set_perm(e, 0644);
    if (kind == 'f') {
      archive_entry_set_filetype(e, AE_IFREG);
      archive_entry_set_size(e, static_cast<la_int64_t>(data.size()));
    } else if (kind == 'l') {
      archive_entry_set_filetype(e, AE_IFLNK);
      archive_entry_set_symlink(e, data.c_str());
    } else {
      archive_entry_set_filetype(e, AE_IFREG);
      archive_entry_set_hardlink(e, data.c_str());
    }
    ASSERT_EQ(archive_write_header(a, e), ARCHIVE_OK) << name;
    if (kind == 'f') archive_write_data(a, data.data(), data.size());
    archive_entry_free(e);
  }
  archive_write_close(a);
  archive_write_free(a);
}

}  // namespace

TEST_F(DuelBoard, TournamentPublishesOneBankPerParticipant) {
  const auto t = tree(board());
  EXPECT_EQ(only(t, "participants/").size(), 6u);  // a record and a replay script each
  EXPECT_EQ(only(t, "banks/").size(), 3u);
  EXPECT_EQ(only(t, "matches/").size(), 3u);
  EXPECT_TRUE(t.count("rankings.json") && t.count("leaderboard.html") && t.count("leaderboard.json"));
  const ev::LeaderboardDir b = ev::LeaderboardDir::open(board());
  std::vector<std::string> ids;
  for (const auto& p : b.participants()) ids.push_back(p.id);
  EXPECT_EQ(ids, kIncumbents);
}

TEST_F(DuelBoard, EnterPlaysThreeMatchesKeepsIncumbentsAndResumesAfterKill9) {
  const std::string d = copy_board("enter");
  const std::string B = d + "/board";
  const auto before = tree(B);
  ASSERT_EQ(only(before, "matches/").size(), 3u);
  // dave repairs bob's and carol's tasks; the first run's Blue sessions sleep, so that kill -9 lands
  // in its second match; the rerun gets the same script without the sleep.
  const std::string slow = write_script(d + "/dave_slow.json", {"bob#replay", "carol#replay"}, "sleep 4; ");
  const std::string fast = write_script(d + "/dave.json", {"bob#replay", "carol#replay"});
  const std::string enter = "duel enter " + kEntrant + " --name " + kEntrant + " --leaderboard " + B +
                            " --bootstrap 50 --workers 1 --script ";
  auto launched = spade::fixtures::run_command("setsid " + std::string(SPADE_BIN) + " " + enter + slow + " > " + d +
                                               "/first.log 2>&1 & echo $!");
  const int pid = std::stoi(launched.out);
  const std::string progress = B + "/work/enter/" + ev::leaderboard_slug(kEntrant) + "/tournament/matches.json";
  bool one_done = false;
  for (int i = 0; i < 600 && !one_done; ++i) {  // up to 5 minutes
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    one_done = fs::exists(progress) && ev::load_matches(progress).size() == 1;
    if (::kill(pid, 0) != 0) break;
  }
  ASSERT_TRUE(one_done) << spade::read_file(d + "/first.log");
  ASSERT_EQ(::kill(-pid, SIGKILL), 0);  // the whole process group: spade and its sandboxes
  for (int i = 0; i < 100 && ::kill(pid, 0) == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const std::vector<ev::MatchRecord> first = ev::load_matches(progress);
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(tree(B), before);  // nothing published yet: neither the entrant's bank, record nor matches

  auto r = spade_cmd(enter + fast);
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_TRUE(has(r, kEntrant + " enters against 3 incumbents: 3 matches")) << r.out;
  EXPECT_FALSE(has(r, "[1/3]")) << r.out;  // the finished match is not replayed
  EXPECT_TRUE(has(r, "[2/3]") && has(r, "[3/3]")) << r.out;

  const auto after = tree(B);
  for (const auto& [file, sha] : before) {  // incumbents' banks, matches and records: byte-identical
    if (file.rfind("banks/", 0) == 0 || file.rfind("matches/", 0) == 0 || file.rfind("participants/", 0) == 0) {
      ASSERT_TRUE(after.count(file)) << file << " is gone";
      EXPECT_EQ(after.at(file), sha) << file << " changed";
    }
  }
  EXPECT_EQ(only(after, "matches/").size(), 6u);
  EXPECT_EQ(only(after, "banks/").size(), 4u);
  const ev::LeaderboardDir b = ev::LeaderboardDir::open(B);
  // By hand from the scripts: alice repairs dave's task and dave not hers (dave loses 0-2); dave
  // repairs bob's and carol's tasks and neither repairs his (dave wins 2-0 twice).
  const std::map<std::string, std::string> expected = {
      {"alice#replay", "b_wins 0-2"}, {"bob#replay", "a_wins 2-0"}, {"carol#replay", "a_wins 2-0"}};
  std::map<std::string, std::string> results;
  for (const ev::MatchRecord& m : b.matches())
    if (m.model_a == kEntrant)
      results[m.model_b] = std::string(ev::outcome_name(m.outcome)) + " " + std::to_string(int(*m.score_a)) + "-" +
                           std::to_string(int(*m.score_b));
  EXPECT_EQ(results, expected);
  const std::string first_id = first[0].match_id;
  EXPECT_EQ(ev::match_to_json(ev::load_matches(progress)[0]), ev::match_to_json(first[0]));
  EXPECT_EQ(ev::match_to_json(ev::match_from_json(ev::read_json_document(b.match_path(first_id)), first_id)),
            ev::match_to_json(first[0]));
  ASSERT_TRUE(b.find(kEntrant));
  EXPECT_EQ(b.find(kEntrant)->origin, "enter");
  EXPECT_EQ(ev::read_json_document(B + "/rankings.json")["rankings"].size(), 4u);

  // The regenerated page: a row per participant, nothing fetched.
  const spade::testing::RenderedPage page = spade::testing::render_in_chromium(B + "/leaderboard.html", d);
  EXPECT_TRUE(page.page_requests.empty());
  size_t rows = 0;
  for (size_t at = page.dom.find("<tr class=\"participant\""); at != std::string::npos;
       at = page.dom.find("<tr class=\"participant\"", at + 1))
    ++rows;
  EXPECT_EQ(rows, 4u);
  for (const std::string& id : {kIncumbents[0], kIncumbents[1], kIncumbents[2], kEntrant})
    EXPECT_NE(page.dom.find(id), std::string::npos) << id;
  RecordProperty("screenshot", d + "/screenshot.png");

  // A participant enters once.
  r = spade_cmd(enter + fast);
  EXPECT_EQ(r.rc, 2) << r.out;
  EXPECT_TRUE(has(r, "'" + kEntrant + "' is already on " + B)) << r.out;
}

TEST_F(DuelBoard, ImportMergesOnceAndRefusesConflictsAndHostileArchives) {
  const std::string d = copy_board("import");
  const std::string A = d + "/board";
  auto r = spade_cmd("duel export --leaderboard " + A + " --out " + d + "/a.tar");
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_TRUE(has(r, "3 participants, 3 matches")) << r.out;
  // The target: an empty leaderboard of the same arena.
  const std::string T = d + "/target";
  ev::LeaderboardDir::create(T, ev::LeaderboardDir::open(A).arena());

  r = spade_cmd("duel import " + d + "/a.tar --leaderboard " + T + " --bootstrap 0");
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_TRUE(has(r, "3 participants added: alice#replay, bob#replay, carol#replay, 3 matches added")) << r.out;
  const auto a_tree = tree(A), t_tree = tree(T);
  for (const char* folder : {"participants/", "banks/", "matches/"}) EXPECT_EQ(only(t_tree, folder), only(a_tree, folder));
  EXPECT_EQ(ev::read_json_document(T + "/rankings.json")["rankings"].size(), 3u);

  // The same archive again: refused by its hash, nothing written.
  r = spade_cmd("duel import " + d + "/a.tar --leaderboard " + T);
  EXPECT_NE(r.rc, 0) << r.out;
  EXPECT_TRUE(has(r, "was already imported on")) << r.out;
  EXPECT_EQ(tree(T), t_tree);

  // A contribution whose match has an id already on T with other content: a conflicting id.
  const ev::LeaderboardDir a_board = ev::LeaderboardDir::open(A);
  ev::MatchRecord m = a_board.matches().at(0);
  m.outcome = m.outcome == ev::Outcome::kAWins ? ev::Outcome::kBWins : ev::Outcome::kAWins;
  spade::write_file_atomic(a_board.match_path(m.match_id), ev::match_to_json(m).dump(2) + "\n");
  ASSERT_EQ(spade_cmd("duel export --leaderboard " + A + " --out " + d + "/conflict.tar").rc, 0);
  r = spade_cmd("duel import " + d + "/conflict.tar --leaderboard " + T);
  EXPECT_NE(r.rc, 0) << r.out;
  EXPECT_TRUE(has(r, "conflicting id: " + a_board.match_path(m.match_id).replace(0, A.size(), T))) << r.out;
  EXPECT_EQ(tree(T), t_tree);

  // Hostile archives: each refused with the entry named, nothing written anywhere.
  const std::string manifest = spade::read_file(A + "/leaderboard.json");
  const std::vector<std::pair<std::vector<std::tuple<std::string, char, std::string>>, std::string>> hostile = {
      {{{"leaderboard.json", 'f', manifest}, {"../escape.json", 'f', "{}"}}, "entry '../escape.json': refused"},
      {{{"/tmp/spade_abs_escape.json", 'f', "{}"}}, "entry '/tmp/spade_abs_escape.json': refused"},
      {{{"matches/../../escape.json", 'f', "{}"}}, "entry 'matches/../../escape.json': refused"},
      {{{"notes/readme.txt", 'f', "hi"}}, "entry 'notes/readme.txt': refused"},
      {{{"matches/link.json", 'l', "/etc/passwd"}}, "entry 'matches/link.json' is a link"},
      {{{"leaderboard.json", 'f', manifest}, {"banks/x.sqlite", 'h', "leaderboard.json"}}, "entry 'banks/x.sqlite' is a link"},
  };
  int k = 0;
  for (const auto& [entries, expected] : hostile) {
    const std::string tar = d + "/hostile" + std::to_string(k++) + ".tar";
    write_tar(tar, entries);
    r = spade_cmd("duel import " + tar + " --leaderboard " + T);
    EXPECT_NE(r.rc, 0) << tar << "\n" << r.out;
    EXPECT_TRUE(has(r, expected)) << tar << "\n" << r.out;
    EXPECT_EQ(tree(T), t_tree) << tar;
  }
  EXPECT_FALSE(fs::exists(T + "/../escape.json"));
  EXPECT_FALSE(fs::exists(d + "/escape.json"));
  EXPECT_FALSE(fs::exists("/tmp/spade_abs_escape.json"));
  // Above the size cap (the archive of A is larger than 1000 bytes: it holds three SQLite banks).
  r = spade_cmd("duel import " + d + "/conflict.tar --leaderboard " + T + " --max-bytes 1000");
  EXPECT_NE(r.rc, 0) << r.out;
  EXPECT_TRUE(has(r, "above the size cap of 1000")) << r.out;
  EXPECT_EQ(tree(T), t_tree);
}

TEST_F(DuelBoard, EnterResolvesItsSourceAndRefusesWhatIsNotALeaderboard) {
  const std::string d = copy_board("enter_usage");
  const auto before = tree(d + "/board");
  // A directory is the participant checkpoint:DIR, resolved by the duel commands' one agent factory
  // (apps/checkpoint_agent.h); one that holds no checkpoint is named and stops before any play.
  fs::create_directories(d + "/ckpt");
  auto r = spade_cmd("duel enter " + d + "/ckpt --name ck#x --leaderboard " + d + "/board");
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_TRUE(has(r, "participant checkpoint:" + d + "/ckpt: " + d + "/ckpt/config.json does not exist")) << r.out;
  EXPECT_EQ(tree(d + "/board"), before);
  // Not a leaderboard: a usage error naming how one is made, and nothing created.
  r = spade_cmd("duel enter x#y --name x#y --leaderboard " + d + "/none");
  EXPECT_EQ(r.rc, 2) << r.out;
  EXPECT_TRUE(has(r, "is not a leaderboard (no leaderboard.json); make one with `spade duel tournament")) << r.out;
  EXPECT_FALSE(fs::exists(d + "/none"));
  r = spade_cmd("duel import " + d + "/none.tar --leaderboard " + d + "/none");
  EXPECT_EQ(r.rc, 2) << r.out;
  // A tournament's --leaderboard that holds something else is refused before any play.
  spade::write_file_atomic(d + "/other/notes.txt", "mine");
  r = spade_cmd("duel tournament --participant a#r --participant b#r --spec " + kSpec + " --work " + root_ +
                "/work --dir " + d + "/t --leaderboard " + d + "/other");
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_TRUE(has(r, "duel tournament --leaderboard " + d + "/other: exists and is not empty")) << r.out;
  EXPECT_FALSE(fs::exists(d + "/t/state.json"));
}
