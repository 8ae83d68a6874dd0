// `spade duel` edge cases end to end (issue 17), by the real binary: an empty or missing task bank
// is a usage error that names the bank and the command that fills it (never "1.00 - 1.00: draw",
// exit 0); a match list given to `duel report` is named as such; a negative --bootstrap is refused;
// no raw JSON library text reaches the terminal.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "common/atomic_file.h"
#include "evaldual/task_bank.h"
#include "tests/testing/test_util.h"

namespace {

std::string fresh(const std::string& name) { return spade::fixtures::fresh_test_dir("duel_cli", name); }

const std::string kSpec = std::string(SPADE_SOURCE_DIR) + "/tests/evaldual/fixtures/repos/pyfix.yaml";
const std::string kMatches =
    R"([{"match_id": "m1", "model_a": "x", "model_b": "y", "outcome": "draw"},
        {"match_id": "m2", "model_a": "y", "model_b": "z", "outcome": "draw"},
        {"match_id": "m3", "model_a": "x", "model_b": "z", "outcome": "draw"}])";

spade::fixtures::CommandResult spade_cmd(const std::string& args) {
  return spade::fixtures::run_command(std::string(SPADE_BIN) + " " + args + " 2>&1");
}

}  // namespace

TEST(DuelCli, MatchOnAMissingOrEmptyBankIsAUsageError) {
  const std::string work = fresh("empty_bank");
  const std::string args = "duel match --a alice#replay --b bob#replay --spec " + kSpec + " --work " + work + " --turns 1";
  auto r = spade_cmd(args);
  EXPECT_EQ(r.rc, 2) << r.out;
  EXPECT_NE(r.out.find("the task bank " + work + "/bank.sqlite does not exist"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("spade duel bank generate --participant ID"), std::string::npos) << r.out;
  EXPECT_FALSE(std::filesystem::exists(work + "/bank.sqlite"));  // not created as a side effect
  { spade::evaldual::TaskBank empty(work + "/bank.sqlite"); }
  r = spade_cmd(args);
  EXPECT_EQ(r.rc, 2) << r.out;
  EXPECT_NE(r.out.find("holds no task of alice#replay, bob#replay on these repositories"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("--spec " + kSpec), std::string::npos) << r.out;  // the command to run, with the specs
  EXPECT_EQ(r.out.find(": draw"), std::string::npos) << r.out;  // no "A 1.00 - 1.00 B: draw" result line
  // The tournament checks the same bank the same way.
  r = spade_cmd("duel tournament --participant alice#replay --participant bob#replay --spec " + kSpec + " --work " + work);
  EXPECT_EQ(r.rc, 2) << r.out;
  EXPECT_NE(r.out.find("duel tournament: the task bank"), std::string::npos) << r.out;
}

TEST(DuelCli, MoreTurnsThanSlotsIsAUsageErrorNamingBoth) {
  // alice generated 1 slot on pyfix (exhausted: tried 5 times, no task); asking for 3 turns per side
  // would score 2 Red turns of tasks never asked for as Blue wins. Matches default to 1 turn (= the
  // bank's default of 1 slot), which passes this check and stops only at the empty bank.
  const std::string work = fresh("turns_vs_slots");
  { spade::evaldual::TaskBank bank(work + "/bank.sqlite"); bank.set_slot_state("alice#replay", "pyfix", 0,
                                                                               spade::evaldual::SlotState::exhausted); }
  const std::string args = "duel match --a alice#replay --b bob#replay --spec " + kSpec + " --work " + work;
  auto r = spade_cmd(args + " --turns 3");
  EXPECT_EQ(r.rc, 2) << r.out;
  EXPECT_NE(r.out.find("--turns 3 asks for 3 tasks per repository and side, but alice#replay has 1 slot on pyfix"),
            std::string::npos) << r.out;
  EXPECT_NE(r.out.find("pass --turns 1, or generate 3 slots"), std::string::npos) << r.out;
  r = spade_cmd(args);
  EXPECT_EQ(r.rc, 2) << r.out;
  EXPECT_EQ(r.out.find("asks for"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("holds no task of alice#replay, bob#replay"), std::string::npos) << r.out;
  r = spade_cmd("duel tournament --participant alice#replay --participant bob#replay --spec " + kSpec + " --work " +
                work + " --turns 2");
  EXPECT_EQ(r.rc, 2) << r.out;
  EXPECT_NE(r.out.find("duel tournament: --turns 2 asks for 2 tasks"), std::string::npos) << r.out;
}

TEST(DuelCli, ReportNamesAMatchListAndRateRefusesNegativeBootstrap) {
  const std::string dir = fresh("report");
  spade::write_file_atomic(dir + "/matches.json", kMatches);
  auto r = spade_cmd("duel report --rankings " + dir + "/matches.json");
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_NE(r.out.find(dir + "/matches.json: this is a match list (match records), not a rankings JSON; rate it first: "
                             "spade duel rate --matches " + dir + "/matches.json --out rankings.json"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("json.exception"), std::string::npos) << r.out;
  r = spade_cmd("duel rate --matches " + dir + "/matches.json --bootstrap -5");
  EXPECT_EQ(r.rc, 2) << r.out;
  EXPECT_NE(r.out.find("--bootstrap"), std::string::npos) << r.out;
  // Three identical players through the whole path: rate, then report; all share rank 1.
  r = spade_cmd("duel rate --matches " + dir + "/matches.json --bootstrap 50 --out " + dir + "/rankings.json");
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("shared rank"), std::string::npos) << r.out;
  r = spade_cmd("duel report --rankings " + dir + "/rankings.json");
  ASSERT_EQ(r.rc, 0) << r.out;
  for (const char* p : {"| 1 | x |", "| 1 | y |", "| 1 | z |"}) EXPECT_NE(r.out.find(p), std::string::npos) << p << "\n" << r.out;
  // The web page of the same rankings (evaldual/leaderboard_page.h; rendered in Chromium by
  // tests/evaldual/test_leaderboard_page.cpp): one row per player, all at rank 1.
  r = spade_cmd("duel report --rankings " + dir + "/rankings.json --format html --out " + dir + "/board.html");
  ASSERT_EQ(r.rc, 0) << r.out;
  const std::string page = spade::read_file(dir + "/board.html");
  EXPECT_EQ(page.rfind("<!DOCTYPE html>", 0), 0u);
  for (const char* p : {"<tr class=\"participant\" data-rank=\"1\"><td>1</td><td class=\"id\">x</td>",
                        "<td class=\"id\">y</td>", "<td class=\"id\">z</td>"})
    EXPECT_NE(page.find(p), std::string::npos) << p;
  // A rankings file with a wrong field: the file, the field, what was expected.
  std::string text = spade::read_file(dir + "/rankings.json");
  text.replace(text.find("\"points\": "), 10, "\"points\": \"many\", \"was\": ");
  spade::write_file_atomic(dir + "/bad.json", text);
  r = spade_cmd("duel report --rankings " + dir + "/bad.json");
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_NE(r.out.find(dir + "/bad.json: rankings[0].points: expected a number, got a string \"many\""), std::string::npos)
      << r.out;
  spade::write_file_atomic(dir + "/broken.json", "{\"matches\": [");
  r = spade_cmd("duel rate --matches " + dir + "/broken.json");
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_NE(r.out.find(dir + "/broken.json:1:14: not valid JSON"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("json.exception"), std::string::npos) << r.out;
}
