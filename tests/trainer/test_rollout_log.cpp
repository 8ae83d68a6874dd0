// rollouts.h5 (issue 5): rows appended per step and truncated on resume, read back with h5py by an
// independent script (tests/trainer/read_rollouts_h5.py) that also checks offsets and source hashes.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

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
  log.append(rows, {{"game_0", "logic", code, "go left", 0, false}});
  std::vector<rollout::Sample> step1 = {make_sample(rollout::Role::Designer, 4, 0, "game_0"),
                                        make_sample(rollout::Role::Agent, 2, 1, "game_0")};
  log.append({{&step1[0], 1}, {&step1[1], 1}}, {});
  rollout::Sample s2 = make_sample(rollout::Role::Agent, 5, 2, "seed_x");
  log.append({{&s2, 2}}, {{"seed_x", "logic", "class SEnv: pass\n", "", 2, true}});
  EXPECT_EQ(log.num_episodes(), 6);

  nlohmann::json j = testutil::read_rollouts_h5(path, (dir / "read.json").string());
  EXPECT_EQ(j["format"], "spade-rollouts-2");
  EXPECT_EQ(j["total_episodes"], 6);
  ASSERT_EQ(j["episodes"].size(), 6u);
  const auto& e0 = j["episodes"][0];
  EXPECT_EQ(e0["role"], "agent");
  EXPECT_EQ(e0["tokens"], nlohmann::json({1, 2, 100, 101, 102}));
  EXPECT_EQ(e0["loss_mask"], nlohmann::json({0, 0, 1, 1, 1}));
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
  EXPECT_EQ(j["environments"][0]["source"], code);  // UTF-8 text round trip
  EXPECT_EQ(j["environments"][0]["hint"], "go left");
  EXPECT_EQ(j["environments"][1]["from_seed"], 1);

  // Resume at step 1: rows of steps >= 1 and the environment born at 2 are dropped; appends continue.
  RolloutLog reopened(path);
  EXPECT_TRUE(reopened.truncate(1));
  EXPECT_EQ(reopened.num_episodes(), 3);
  reopened.append({{&step1[1], 1}}, {});
  j = testutil::read_rollouts_h5(path, (dir / "read2.json").string());
  ASSERT_EQ(j["episodes"].size(), 4u);
  EXPECT_EQ(j["episodes"][3]["id"], 3);
  EXPECT_EQ(j["episodes"][3]["tokens"], nlohmann::json({1, 2, 100, 101}));
  EXPECT_EQ(j["environments"].size(), 1u);

  // A file torn by a kill is set aside and replaced.
  write_file_atomic(path, "not hdf5");
  RolloutLog torn(path);
  EXPECT_FALSE(torn.truncate(1));
  EXPECT_TRUE(fs::exists(path + ".corrupt"));
  EXPECT_EQ(torn.num_episodes(), 0);
}

// A rollouts.h5 of another format version (here format 1, whose env_source_hash used a wrong FNV
// offset basis) is refused by name on open, never appended to: its hashes would not be comparable.
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
    EXPECT_NE(what.find("spade-rollouts-2"), std::string::npos) << what;
    EXPECT_NE(what.find(path.string()), std::string::npos) << what;
  }
}
