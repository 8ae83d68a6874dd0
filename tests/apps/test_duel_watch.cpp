// Duel scoring during training end to end by the real binary (issue 20, "Duel scoring during training"):
// a tiny CPU run of the embedded default (configs/games-tiny.yaml cut to 2 cold-start steps and 4
// self-play steps, a checkpoint every 2) with duel.every 2 on the CPU arena (configs/duel/arena-tiny.yaml:
// the pyfix fixture) against one scripted opponent. Expected by hand: the opponent enters first (its
// bank, no match); step 2's checkpoint enters against M = 1 incumbent: ceil(log2 1)+1 = 1 match,
// clamped to [3, M] -> 1 (M < 3); step 4's against M = 2: ceil(log2 2)+1 = 2 matches, clamped -> 2
// (paper §3.4, reference §6). So 3 participants and 3 matches, one duel/metrics.jsonl line per scored
// step (2 and 4) with the seven duel/* keys, whichever way the checkpoints play (in the watcher's own
// process, or through a `spade serve` it starts). Then the watcher is killed with SIGKILL in the middle
// of step 4's entry and rerun: the leaderboard it finishes equals an uninterrupted watcher's on a copy of
// the same run (same participants, match outcomes, scores and turn results, ratings).
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include "common/atomic_file.h"
#include "evaldual/input_fields.h"
#include "evaldual/leaderboard_dir.h"
#include "evaldual/match_record.h"
#include "evaldual/rankings.h"
#include "tests/testing/test_util.h"
#include "trainer/run_report.h"

namespace fs = std::filesystem;
namespace ev = spade::evaldual;
using nlohmann::json;

namespace {

const std::string kSrc = SPADE_SOURCE_DIR;
const std::string kOpponent = "opp#replay";
const std::vector<std::string> kDuelKeys = {"duel/bt",           "duel/bt_ci_low",      "duel/bt_ci_high",
                                            "duel/red_win_rate", "duel/blue_win_rate", "duel/admitted_tasks",
                                            "duel/match_s"};

spade::fixtures::CommandResult spade_cmd(const std::string& args) {
  return spade::fixtures::run_command(std::string(SPADE_BIN) + " " + args + " 2>&1");
}

// `spade train` of the tiny run `name` under `out` with the duel on, plus `extra` --set flags.
spade::fixtures::CommandResult train(const std::string& out, const std::string& name, const std::string& extra) {
  return spade_cmd("train --config " + kSrc + "/configs/games-tiny.yaml --name " + name + " --set run.out_dir=" + out +
                   " --set warm_start.max_steps=2 --set selfplay.steps=4 --set checkpoint.every=2 --set duel.every=2"
                   " --set duel.arena=" + kSrc + "/configs/duel/arena-tiny.yaml --set 'duel.opponents=[" + kOpponent +
                   "=" + kSrc + "/tests/evaldual/fixtures/duel_scripts/pyfix_unique_slug.json]' --set duel.max_new_tokens=32" +
                   extra);
}

std::vector<json> jsonl(const std::string& path) {
  std::vector<json> out;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) out.push_back(json::parse(line));
  return out;
}

// What a scored run must hold (see the file comment).
void expect_scored(const std::string& run, const std::string& name) {
  const ev::LeaderboardDir board = ev::LeaderboardDir::open(run + "/duel/leaderboard");
  std::set<std::string> ids;
  for (const auto& p : board.participants()) ids.insert(p.id);
  EXPECT_EQ(ids, (std::set<std::string>{kOpponent, name + "@2", name + "@4"}));
  EXPECT_EQ(board.matches().size(), 3u);
  const ev::Rankings r = ev::rankings_from_json(ev::read_json_document(board.rankings_path()), board.rankings_path());
  ASSERT_EQ(r.rankings.size(), 3u);
  for (const ev::RankingEntry& e : r.rankings) {
    EXPECT_TRUE(std::isfinite(e.bradley_terry.value)) << e.participant.id();
    ASSERT_TRUE(e.bradley_terry.ci.has_value()) << e.participant.id();
    EXPECT_TRUE(std::isfinite(e.bradley_terry.ci->first) && std::isfinite(e.bradley_terry.ci->second)) << e.participant.id();
    EXPECT_LE(e.bradley_terry.ci->first, e.bradley_terry.ci->second);
  }
  EXPECT_TRUE(fs::exists(board.page_path()));
  const std::vector<json> lines = jsonl(run + "/duel/metrics.jsonl");
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0]["step"], 2);
  EXPECT_EQ(lines[1]["step"], 4);
  for (const json& l : lines)
    for (const std::string& k : kDuelKeys) EXPECT_TRUE(l.contains(k)) << k << " missing in " << l.dump();
  // The training metrics hold them: `spade report`'s reading joins them to steps 2 and 4.
  const spade::trainer::RunMetrics m = spade::trainer::load_run_metrics(run);
  int with_duel = 0;
  for (const json& s : m.steps) with_duel += s.contains("duel/bt");
  EXPECT_EQ(with_duel, 2);
}

// The leaderboard as content: participants, each match's outcome, scores and turn results, and the
// ratings (timestamps and paths, which differ between two runs, left out).
json board_content(const std::string& dir) {
  const ev::LeaderboardDir board = ev::LeaderboardDir::open(dir);
  json out;
  for (const auto& p : board.participants()) out["participants"].push_back(p.id);
  for (const ev::MatchRecord& m : board.matches()) {
    json t = json::array();
    for (const ev::TurnRecord& turn : m.turns) t.push_back({turn.red, turn.blue, turn.task_id, turn.blue_composite, turn.auto_win});
    out["matches"].push_back({m.match_id, m.model_a, m.model_b, ev::outcome_name(m.outcome), m.score_a.value_or(-1),
                              m.score_b.value_or(-1), t});
  }
  const ev::Rankings r = ev::rankings_from_json(ev::read_json_document(board.rankings_path()), board.rankings_path());
  for (const ev::RankingEntry& e : r.rankings) out["bt"][e.participant.id()] = e.bradley_terry.value;
  return out;
}

bool log_has(const std::string& path, const std::string& text) {
  std::ifstream in(path);
  const std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return s.find(text) != std::string::npos;
}

TEST(DuelWatch, TrainingScoresItsCheckpointsInProcess) {
  const std::string out = spade::fixtures::fresh_test_dir("duel_watch", "in_process");
  const auto r = train(out, "dw", "");
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("duel: scoring every 2 steps in a watcher"), std::string::npos) << r.out;
  const std::string log = out + "/dw/duel/watch.log";
  EXPECT_TRUE(log_has(log, "in-process calls")) << spade::read_file(log);
  expect_scored(out + "/dw", "dw");
  // The run's report draws the duel chart.
  const auto rep = spade_cmd("report " + out + "/dw --out " + out + "/report.html");
  ASSERT_EQ(rep.rc, 0) << rep.out;
  EXPECT_NE(spade::read_file(out + "/report.html").find("data-metric=\"duel/bt\""), std::string::npos);
}

TEST(DuelWatch, TrainingScoresItsCheckpointsThroughServe) {
  const std::string out = spade::fixtures::fresh_test_dir("duel_watch", "serve");
  const auto r = train(out, "ds", " --set duel.serve=true");
  ASSERT_EQ(r.rc, 0) << r.out;
  const std::string log = out + "/ds/duel/watch.log";
  EXPECT_TRUE(log_has(log, "model calls (0 failed")) << spade::read_file(log);
  EXPECT_TRUE(log_has(out + "/ds/duel/serve.log", "spade serve: listening on http://127.0.0.1:"));
  EXPECT_FALSE(log_has(log, "in-process calls")) << spade::read_file(log);
  expect_scored(out + "/ds", "ds");
}

TEST(DuelWatch, AWatcherKilledMidEntryResumesToTheSameLeaderboard) {
  const std::string out = spade::fixtures::fresh_test_dir("duel_watch", "kill");
  fs::create_directories(out + "/a");
  const auto r = train(out + "/a", "dk", " --set duel.spawn_watcher=false");
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_FALSE(fs::exists(out + "/a/dk/duel/leaderboard"));  // nobody scored: the watcher is ours to run
  fs::copy(out + "/a", out + "/b", fs::copy_options::recursive);

  // a: uninterrupted.
  const auto whole = spade_cmd("duel watch " + out + "/a/dk --once");
  ASSERT_EQ(whole.rc, 0) << whole.out;
  EXPECT_NE(whole.out.find("duel watch: 2 checkpoints scored"), std::string::npos) << whole.out;

  // b: killed once step 4's first match is in, then run again.
  const std::string log = out + "/b/watch.log";
  const auto bg = spade::fixtures::run_command(std::string(SPADE_BIN) + " duel watch " + out + "/b/dk --once > " + log +
                                               " 2>&1 & echo $!");
  const pid_t pid = std::stoi(bg.out);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(5);
  while (!log_has(log, "[1/2] enter:dk@4") && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_TRUE(log_has(log, "[1/2] enter:dk@4")) << spade::read_file(log);
  ASSERT_EQ(kill(pid, SIGKILL), 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  // Killed mid-entry: step 4 is not on the leaderboard and has no line yet; step 2 is complete.
  EXPECT_EQ(jsonl(out + "/b/dk/duel/metrics.jsonl").size(), 1u);
  const auto again = spade_cmd("duel watch " + out + "/b/dk --once");
  ASSERT_EQ(again.rc, 0) << again.out;
  EXPECT_NE(again.out.find("duel watch: 1 checkpoint scored"), std::string::npos) << again.out;
  // The finished match of step 4 was not replayed: only the second is played.
  EXPECT_EQ(again.out.find("[1/2] enter:dk@4"), std::string::npos) << again.out;
  EXPECT_NE(again.out.find("[2/2] enter:dk@4"), std::string::npos) << again.out;
  expect_scored(out + "/b/dk", "dk");
  EXPECT_EQ(board_content(out + "/b/dk/duel/leaderboard").dump(1), board_content(out + "/a/dk/duel/leaderboard").dump(1));
}

}  // namespace
