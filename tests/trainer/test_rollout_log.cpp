// rollouts.h5 (issue 5): rows appended per step and truncated on resume, read back with h5py by an
// independent script (tests/trainer/read_rollouts_h5.py) that also checks offsets and source hashes.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <limits>

#include "common/error.h"
#include "tests/trainer/spawn_helpers.h"
#include "trainer/rollout_log.h"

using namespace spade;
using namespace spade::trainer;
namespace fs = std::filesystem;

namespace {

rollout::Sample make_sample(rollout::Role role, int n, int64_t rollout_id, const std::string& env) {
  rollout::Sample s;
  s.role = role;
  s.append_context({1, 2});
  std::vector<int64_t> ids;
  std::vector<float> lp;
  for (int i = 0; i < n; ++i) {
    ids.push_back(100 + i);
    lp.push_back(-0.5f - i / 7.0f);
  }
  s.append_sampled(ids, lp);
  s.reward = 0.25 * n;
  s.advantage = -1.0 / 3.0;
  s.env_id = env;
  s.skill = "logic";
  s.rollout_id = rollout_id;
  return s;
}

}  // namespace

TEST(RolloutLog, AppendTruncateAndReadWithH5py) {
  const fs::path dir = fs::path(SPADE_TEST_TMP) / "rollout_log";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string path = (dir / "rollouts.h5").string();
  RolloutLog log(path);
  const std::string code = "class GuessEnv:\n    \"\"\"caf\xc3\xa9\"\"\"\n";
  std::vector<rollout::Sample> step0 = {make_sample(rollout::Role::Agent, 3, 0, "game_0"),
                                        make_sample(rollout::Role::Agent, 1, 0, "game_0")};
  // A tool-use episode's spans (rollout::ToolSegment): tokens 2-3 a response that calls a tool, token 4
  // the tool turn of its result (a span may cover sampled tokens only in a test; the kind wins).
  step0[0].tool_segments = {{2, 4, rollout::ToolSegment::Kind::kCall}, {4, 5, rollout::ToolSegment::Kind::kResult}};
  std::vector<EpisodeRow> rows;
  for (auto& s : step0) {
    EpisodeRow r;
    r.sample = &s;
    r.step = 0;
    r.terminated = true;
    r.turns = 2;
    r.env_source_hash = source_hash(code);
    rows.push_back(r);
  }
  rollout::Sample hinted = make_sample(rollout::Role::Agent, 2, 0, "game_0");
  rows.push_back({&hinted, 0, /*hinted=*/true, /*trained=*/false, false, true, 5, source_hash(code)});
  log.append(rows, {});
  // Environment rows are written when their window closes: game_0 (born at 0) at step 1 with its
  // window's 4 plays, 3 won, and hint regret 0.25; seed_x (born at 1, a fixed-pool draw: no hint, so
  // regret NaN) at step 2 after 2 plays, 1 won.
  EnvironmentRow game0{"game_0", "logic", code, "go left", 0, false};
  game0.closed = 1;
  game0.window_plays = 4;
  game0.win_rate = 0.75;
  game0.regret = 0.25;
  EnvironmentRow seed_x{"seed_x", "logic", "class SEnv: pass\n", "", 1, true};
  seed_x.closed = 2;
  seed_x.window_plays = 2;
  seed_x.win_rate = 0.5;
  seed_x.regret = std::numeric_limits<double>::quiet_NaN();
  std::vector<rollout::Sample> step1 = {make_sample(rollout::Role::Designer, 4, 0, "game_0"),
                                        make_sample(rollout::Role::Agent, 2, 1, "game_0")};
  log.append({{&step1[0], 1}, {&step1[1], 1}}, {game0});
  rollout::Sample s2 = make_sample(rollout::Role::Agent, 5, 2, "seed_x");
  log.append({{&s2, 2}}, {seed_x});
  EXPECT_EQ(log.num_episodes(), 6);

  nlohmann::json j = testutil::read_rollouts_h5(path, (dir / "read.json").string());
  EXPECT_EQ(j["format"], "spade-rollouts-4");
  EXPECT_EQ(j["total_episodes"], 6);
  ASSERT_EQ(j["episodes"].size(), 6u);
  const auto& e0 = j["episodes"][0];
  EXPECT_EQ(e0["role"], "agent");
  EXPECT_EQ(e0["tokens"], nlohmann::json({1, 2, 100, 101, 102}));
  EXPECT_EQ(e0["loss_mask"], nlohmann::json({0, 0, 1, 1, 1}));
  // By hand from the spans above: context 0, the call's tokens 2, the result's 3.
  EXPECT_EQ(e0["token_kinds"], nlohmann::json({0, 0, 2, 2, 3}));
  EXPECT_EQ(j["episodes"][1]["token_kinds"], nlohmann::json({0, 0, 1}));  // no spans: 0 context, 1 sampled
  EXPECT_EQ(e0["rollout_logprobs"][3].get<double>(), static_cast<double>(-0.5f - 1 / 7.0f));
  EXPECT_EQ(e0["advantage"].get<double>(), -1.0 / 3.0);
  EXPECT_EQ(e0["reward"].get<double>(), 0.75);
  EXPECT_EQ(e0["turns"], 2);
  EXPECT_EQ(e0["terminated"], 1);
  EXPECT_EQ(e0["env_id"], "game_0");
  EXPECT_EQ(e0["env_source_hash"], std::to_string(source_hash(code)));
  EXPECT_EQ(j["episodes"][2]["hinted"], 1);
  EXPECT_EQ(j["episodes"][2]["trained"], 0);
  EXPECT_EQ(j["episodes"][2]["advantage"].get<double>(), 0.0);
  EXPECT_EQ(j["episodes"][3]["role"], "designer");
  EXPECT_EQ(j["episodes"][3]["step"], 1);
  EXPECT_EQ(j["episodes"][3]["rollout_id"], 0);
  ASSERT_EQ(j["environments"].size(), 2u);
  const auto& g0 = j["environments"][0];
  EXPECT_EQ(g0["source"], code);  // UTF-8 text round trip
  EXPECT_EQ(g0["hint"], "go left");
  EXPECT_EQ(g0["born"], 0);
  EXPECT_EQ(g0["closed"], 1);
  EXPECT_EQ(g0["window_plays"], 4);
  EXPECT_EQ(g0["win_rate"].get<double>(), 0.75);
  EXPECT_EQ(g0["regret"].get<double>(), 0.25);
  EXPECT_EQ(j["environments"][1]["from_seed"], 1);
  EXPECT_EQ(j["environments"][1]["closed"], 2);
  EXPECT_EQ(j["environments"][1]["win_rate"].get<double>(), 0.5);
  EXPECT_TRUE(j["environments"][1]["regret"].is_null());  // NaN: no hint played

  // Resume at step 2: the episode of step 2 and seed_x's row (written at step 2, though born at 1) are
  // dropped, game_0's (written at 1) is kept; the redone step appends them again.
  RolloutLog reopened(path);
  EXPECT_TRUE(reopened.truncate(2));
  EXPECT_EQ(reopened.num_episodes(), 5);
  j = testutil::read_rollouts_h5(path, (dir / "read2.json").string());
  ASSERT_EQ(j["environments"].size(), 1u);
  EXPECT_EQ(j["environments"][0]["id"], "game_0");
  reopened.append({{&s2, 2}}, {seed_x});
  j = testutil::read_rollouts_h5(path, (dir / "read3.json").string());
  ASSERT_EQ(j["episodes"].size(), 6u);
  EXPECT_EQ(j["episodes"][5]["id"], 5);
  EXPECT_EQ(j["episodes"][5]["tokens"], nlohmann::json({1, 2, 100, 101, 102, 103, 104}));
  ASSERT_EQ(j["environments"].size(), 2u);
  EXPECT_EQ(j["environments"][1]["id"], "seed_x");
  EXPECT_EQ(j["environments"][1]["closed"], 2);

  // A file torn by a kill is set aside and replaced.
  write_file_atomic(path, "not hdf5");
  RolloutLog torn(path);
  EXPECT_FALSE(torn.truncate(1));
  EXPECT_TRUE(fs::exists(path + ".corrupt"));
  EXPECT_EQ(torn.num_episodes(), 0);
}

// A rollouts.h5 of another format version (here format 1, whose env_source_hash used a wrong FNV
// offset basis; format 2 had no closed column to cut environments by) is refused by name on open,
// never appended to.
TEST(RolloutLog, OtherFormatVersionIsRefusedByName) {
  const fs::path dir = fs::path(SPADE_TEST_TMP) / "rollout_log_v1";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path path = dir / "rollouts.h5";
  const fs::path script = dir / "make_v1.py";
  {
    std::ofstream py(script);
    py << "import sys, h5py\nwith h5py.File(sys.argv[1], 'w') as f:\n"
          "    f.attrs['format'] = 'spade-rollouts-1'\n    f.create_group('episodes')\n";
  }
  ASSERT_EQ(testutil::run_python(script.string(), {path.string()}, (dir / "make_v1.log").string()), 0);
  try {
    RolloutLog log(path.string());
    FAIL() << "a format-1 file was opened";
  } catch (const spade::Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("spade-rollouts-1"), std::string::npos) << what;
    EXPECT_NE(what.find("spade-rollouts-4"), std::string::npos) << what;
    EXPECT_NE(what.find(path.string()), std::string::npos) << what;
  }
}
