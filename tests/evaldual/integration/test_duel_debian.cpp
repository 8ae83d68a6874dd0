// Integration (ctest label `integration`): SWE-Duel on real Debian 12 source packages (issue 6).
//   - cJSON (configs/duel/repos/cjson.yaml): `apt-get source`, CMake setup, Debian's ctest suite as the
//     baseline, then a full match between two scripted (replay) participants whose Red sessions write
//     real features and hidden bugs into cJSON.c with Unity tests in cJSON's own style: admitted tasks,
//     a gate rejection (existing_tests), a clean repair, a latent bug that ships, a collapse and a
//     missing-task auto-win, exact scores asserted.
//   - toolz (configs/duel/repos/toolz.yaml): `apt-get source`, its pytest suite as the baseline.
// Both SKIP (never fail) only when `apt-get source` cannot fetch (no deb-src entry, no mirror); the
// fetched sources and the prepared pristine copies are cached under the build tree
// (SPADE_TEST_TMP/debian_repos) and reused while their pin is unchanged.
// Each test also runs the same suite bare (no sandbox, same cleared environment) and checks that the
// verdict and counts agree; the timings (sandbox vs bare) are printed for the record.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <optional>

#include "common/atomic_file.h"
#include "common/error.h"
#include "evaldual/duel_match.h"
#include "evaldual/process.h"
#include "evaldual/protocol.h"
#include "evaldual/repo_spec.h"
#include "evaldual/task_bank.h"
#include "evaldual/workspace_sandbox.h"
#include "tests/evaldual/duel_test_util.h"
#include "tests/evaldual/integration/arena_repo_util.h"

namespace fs = std::filesystem;
using namespace spade::evaldual;
using namespace spade::evaldual::testing;

namespace {

const std::string kAlice = "alice#replay";
const std::string kBob = "bob#replay";

// A scripted session command: the text of tests/evaldual/fixtures/duel_scripts/cjson/NAME.sh.
std::string script(const std::string& name) { return spade::read_file(fixture("duel_scripts/cjson/" + name + ".sh")); }

// The suite `runs` times in the sandbox over `ws_sb` and bare over `ws_bare`, interleaved (the machine's
// load drifts), after one untimed warm-up run each. Mean wall-clock seconds; the last outcomes.
struct Overhead {
  double sandboxed = 0, bare = 0;
  TestOutcome sandboxed_outcome, bare_outcome;
};
Overhead measure_overhead(const PreparedRepo& repo, const std::string& ws_sb, const std::string& ws_bare, int runs) {
  SandboxOptions so;
  so.limits.timeout_s = repo.spec.timeout_s;
  WorkspaceSandbox sb(ws_sb, so);
  const std::string& cmd = repo.spec.test_command;
  sb.run(cmd);
  bare_run(cmd, ws_bare);
  Overhead o;
  for (int i = 0; i < runs; ++i) {
    CommandResult r = sb.run(cmd);
    o.sandboxed += r.seconds / runs;
    o.sandboxed_outcome = parse_test_output(repo.spec.adapter, r.output, r.rc);
    ProcessResult b = bare_run(cmd, ws_bare);
    o.bare += b.seconds / runs;
    o.bare_outcome = parse_test_output(repo.spec.adapter, b.output, b.rc);
  }
  return o;
}

void report_overhead(const std::string& repo, const Overhead& o) {
  std::cout << "[ overhead ] " << repo << ": suite run in the sandbox " << o.sandboxed << " s, bare " << o.bare
            << " s, ratio " << (o.bare > 0 ? o.sandboxed / o.bare : 0.0) << "\n";
  ::testing::Test::RecordProperty("sandbox_s", std::to_string(o.sandboxed));
  ::testing::Test::RecordProperty("bare_s", std::to_string(o.bare));
}

std::vector<std::string> kinds(const std::vector<AttemptRecord>& as) {
  std::vector<std::string> k;
  for (const auto& a : as) k.push_back(a.status == "admitted" ? "admitted" : a.kind + "/" + a.gate);
  return k;
}

// Alice: slot 1 = cJSON_IndexOfString (attempt 1 rejected: its "bug" breaks cJSON's own tests;
// attempt 2 admitted), slot 2 = cJSON_SumNumbers (admitted). As Blue she repairs Bob's task.
ScriptedAgent make_alice() {
  ScriptedAgent s;
  s.add("cjson/red_a/s1/a1", {script("index_feature")});
  s.add("cjson/red_b/s1/a1", {script("shared_helper_bug")});
  s.add("cjson/red_a/s1/a2", {script("index_feature")});
  s.add("cjson/red_b/s1/a2", {script("index_bug")});
  s.add("cjson/red_c/s1/a2", {script("index_fix")});
  s.add("cjson/red_a/s2/a1", {script("sum_feature")});
  s.add("cjson/red_b/s2/a1", {script("sum_bug")});
  s.add("cjson/red_c/s2/a1", {script("sum_fix")});
  s.add("cjson/blue/" + kBob + "/s1", {script("leak_probe"), script("count_fix")});
  return s;
}

// Bob: slot 1 = cJSON_CountChildrenOfType (admitted); slot 2: his sessions A write nothing (both
// attempts incomplete: exhausted). As Blue he breaks Alice's slot-1 feature and leaves her slot-2 PR.
ScriptedAgent make_bob() {
  ScriptedAgent s;
  s.add("cjson/red_a/s1/a1", {script("count_feature")});
  s.add("cjson/red_b/s1/a1", {script("count_bug")});
  s.add("cjson/red_c/s1/a1", {script("count_fix")});
  s.add("cjson/blue/" + kAlice + "/s1", {script("leak_probe"), script("one_based_index")});
  s.add("cjson/blue/" + kAlice + "/s2", {script("leak_probe")});
  return s;
}

}  // namespace

// The Python repository: fetched, set up and its original suite run once in the sandbox and parsed.
// Expected counts, from `python3 -m pytest -q -p no:cacheprovider toolz` run bare on toolz 0.12.0-1
// (the pin) with each distribution's own interpreter and pytest, before writing this test:
//   Debian 12, Python 3.11, pytest 7.2.1: "185 passed";
//   Debian 13, Python 3.13, pytest 8.3.5 (scripts/check_torch2.sh's root): "2 failed, 183 passed":
//     test_excepts (3.13 strips the common indentation of docstrings, toolz 0.12 compares them indented)
//     and test_inspect_wrapped_property (3.13's inspect follows a __wrapped__ property). Toolz 1.0 fixed
//     both; the pin stays, and the duel deselects them as pre-existing failures (evaldual/protocol.cpp).
namespace {
struct ToolzBaseline {
  int passed;
  std::vector<std::string> failing;
};
std::optional<ToolzBaseline> toolz_baseline_for(const std::string& python) {
  if (python == "3.11") return ToolzBaseline{185, {}};
  if (python == "3.13")
    return ToolzBaseline{183, {"toolz/tests/test_functoolz.py::test_excepts",
                               "toolz/tests/test_inspect_args.py::test_inspect_wrapped_property"}};
  return std::nullopt;
}
}  // namespace

TEST(DuelDebian, ToolzSetupAndBaseline) {
  std::string why;
  std::optional<PreparedRepo> repo = setup_or_skip_reason("toolz", &why);
  if (!repo) GTEST_SKIP() << why;
  const ProcessResult version = bare_run("python3 -c 'import sys; print(\"%d.%d\" % sys.version_info[:2], end=\"\")'", repo->pristine_dir);
  const std::optional<ToolzBaseline> want = toolz_baseline_for(version.output);
  if (!want) GTEST_SKIP() << "toolz 0.12.0's counts were measured with Python 3.11 and 3.13, not " << version.output;
  EXPECT_EQ(repo->pin.rfind("debian:toolz=0.12.0-1:sha256:", 0), 0u) << repo->pin;
  EXPECT_TRUE(fs::exists(repo->pristine_dir + "/toolz/itertoolz.py"));
  EXPECT_TRUE(repo->baseline.summary_found);
  EXPECT_EQ(repo->baseline.ok, want->failing.empty()) << repo->baseline.reason;
  EXPECT_EQ(repo->baseline.passed, want->passed);
  EXPECT_EQ(repo->baseline.failed, static_cast<int>(want->failing.size()));
  std::vector<std::string> recorded = repo->pre_existing_failures;
  std::sort(recorded.begin(), recorded.end());
  EXPECT_EQ(recorded, want->failing);
  // What setup recorded is what `spade duel` loads.
  PreparedRepo loaded = load_prepared_repo(arena_cache_dir(), "toolz");
  EXPECT_EQ(loaded.pin, repo->pin);
  EXPECT_EQ(loaded.baseline.passed, want->passed);
  EXPECT_EQ(loaded.pre_existing_failures, repo->pre_existing_failures);

  // Sandbox vs bare on the same tree: same verdict and counts.
  std::string ws = fresh_dir("toolz-overhead");
  copy_tree(repo->pristine_dir, ws);
  Overhead o = measure_overhead(*repo, ws, ws, 3);
  EXPECT_EQ(o.sandboxed_outcome.passed, o.bare_outcome.passed);
  EXPECT_EQ(o.sandboxed_outcome.failed_tests, o.bare_outcome.failed_tests);
  EXPECT_EQ(o.bare_outcome.passed, want->passed);
  EXPECT_EQ(o.bare_outcome.ok, want->failing.empty());
  EXPECT_EQ(o.sandboxed_outcome.ok, want->failing.empty());
  report_overhead("toolz", o);
  // The fixed cost per command: `true` in the sandbox vs bare (10 runs each).
  {
    WorkspaceSandbox sb(ws);
    double sb_true = 0, bare_true = 0;
    for (int i = 0; i < 10; ++i) {
      CommandResult r = sb.run("true");
      EXPECT_EQ(r.rc, 0) << r.output;
      sb_true += r.seconds / 10;
      bare_true += bare_run("true", ws).seconds / 10;
    }
    std::cout << "[ overhead ] per command: `true` in the sandbox " << sb_true << " s, bare " << bare_true << " s\n";
  }
  fs::remove_all(ws);
}

// cJSON end to end. Expected values:
//   baseline: Debian's cJSON 1.7.15 suite with the default options has 19 ctest tests (cJSON_test and
//     the 18 Unity programs listed in tests/CMakeLists.txt), all passing when built bare with gcc 12;
//   the rejected attempt: the compare_double change, built bare and run with ctest, fails exactly
//     print_number and compare_tests (ctest's "The following tests FAILED" list);
//   the features, bugs and fixes: each feature test passes on d_f, each bug test fails on d and passes
//     on d_f, each fix restores d_f byte for byte (all checked bare before writing this test);
//   the scores, by the protocol's rules (evaldual/protocol.h, duel_match.h): turn order per repository
//     is (Alice's task i, Bob's task i) for i = 0, 1;
//     t0 Bob turns Alice's IndexOfString 1-based: T_e passes, T_f fails -> collapse, Alice +1 (Red);
//     t1 Alice restores the loop of Bob's CountChildrenOfType -> clean repair, Alice +1 (Blue);
//     t2 Bob leaves Alice's SumNumbers PR as it is: T_e, T_f pass, T_b fails -> latent bug ships, Alice +1;
//     t3 Bob has no task for slot 2 -> red_missing_challenge, Alice +1 (Blue).
//     Alice 4, Bob 0: Alice wins.
TEST(DuelDebian, CjsonFullMatch) {
  std::string why;
  std::optional<PreparedRepo> repo = setup_or_skip_reason("cjson", &why);
  if (!repo) GTEST_SKIP() << why;
  EXPECT_EQ(repo->pin.rfind("debian:cjson=1.7.15-1+deb12u4:sha256:", 0), 0u) << repo->pin;
  ASSERT_TRUE(repo->baseline.ok) << repo->baseline.reason;
  EXPECT_EQ(repo->baseline.passed, 19);
  EXPECT_TRUE(repo->pre_existing_failures.empty());
  EXPECT_TRUE(fs::exists(repo->pristine_dir + "/build/CMakeCache.txt"));  // setup configured and built once

  // Sandbox vs bare: the bare copy is configured and built bare (the pristine build tree records the
  // sandbox's /workspace paths); then the same incremental build + ctest command is timed on each.
  {
    std::string ws_sb = fresh_dir("cjson-overhead-sb"), ws_bare = fresh_dir("cjson-overhead-bare");
    copy_tree(repo->pristine_dir, ws_sb);
    copy_tree(repo->pristine_dir, ws_bare, repo->spec.diff_options());  // without build/
    for (const auto& cmd : repo->spec.setup) ASSERT_EQ(bare_run(cmd, ws_bare).rc, 0) << cmd;
    Overhead o = measure_overhead(*repo, ws_sb, ws_bare, 3);
    EXPECT_TRUE(o.sandboxed_outcome.ok && o.bare_outcome.ok);
    EXPECT_EQ(o.bare_outcome.passed, 19);
    EXPECT_EQ(o.sandboxed_outcome.passed, o.bare_outcome.passed);
    report_overhead("cjson", o);
    fs::remove_all(ws_sb);
    fs::remove_all(ws_bare);
  }

  std::string work = fresh_dir("cjson-arena");
  std::vector<PreparedRepo> repos = {*repo};
  ProtocolConfig protocol;
  HarnessConfig h;
  h.step_limit = 10;
  h.recovery_turns = 1;
  h.recovery_steps = 1;
  h.wall_clock_s = 300;
  h.command_limits.timeout_s = 120;
  protocol.red_harness = h;
  protocol.blue_harness = h;
  protocol.work_dir = work + "/play";
  protocol.slots_per_repo = 2;
  protocol.attempts_per_slot = 2;
  TaskBank bank(work + "/bank.sqlite");
  ScriptedAgent alice = make_alice(), bob = make_bob();
  generate_bank(bank, alice, kAlice, repos, protocol);
  generate_bank(bank, bob, kBob, repos, protocol);

  // Red: Alice's first attempt is rejected by the existing-tests gate, naming cJSON's failing tests.
  std::vector<AttemptRecord> alice_attempts = bank.attempts(kAlice, "cjson");
  EXPECT_EQ(kinds(alice_attempts), (std::vector<std::string>{"validation/existing_tests", "admitted", "admitted"}));
  ASSERT_EQ(alice_attempts.size(), 3u);
  EXPECT_NE(alice_attempts[0].reason.find("17 passed, 2 failed"), std::string::npos) << alice_attempts[0].reason;
  EXPECT_NE(alice_attempts[0].reason.find("print_number"), std::string::npos) << alice_attempts[0].reason;
  EXPECT_NE(alice_attempts[0].reason.find("compare_tests"), std::string::npos) << alice_attempts[0].reason;
  EXPECT_EQ(kinds(bank.attempts(kBob, "cjson")),
            (std::vector<std::string>{"admitted", "incomplete-feature/", "incomplete-feature/"}));
  EXPECT_EQ(bank.slot_state(kAlice, "cjson", 1), SlotState::admitted);
  EXPECT_EQ(bank.slot_state(kAlice, "cjson", 2), SlotState::admitted);
  EXPECT_EQ(bank.slot_state(kBob, "cjson", 1), SlotState::admitted);
  EXPECT_EQ(bank.slot_state(kBob, "cjson", 2), SlotState::exhausted);
  ASSERT_EQ(bank.task_ids(kAlice, "cjson").size(), 2u);
  ASSERT_EQ(bank.task_ids(kBob, "cjson").size(), 1u);

  // An admitted task: the PR diff is real C in cJSON.c/cJSON.h (never build/ or .duel/); T_b is sealed.
  PublicBundle pub = bank.load_public(bank.task_ids(kAlice, "cjson").at(0));
  SealedBundle sealed = bank.load_sealed(pub.task_id);
  EXPECT_NE(pub.pr_diff.find("+CJSON_PUBLIC(int) cJSON_IndexOfString(const cJSON * const array, const char * const string)"),
            std::string::npos);
  EXPECT_NE(pub.pr_diff.find("+++ b/cJSON.h"), std::string::npos);
  EXPECT_EQ(pub.pr_diff.find("build/"), std::string::npos);
  EXPECT_EQ(pub.pr_diff.find(".duel"), std::string::npos);
  EXPECT_EQ(pub.feature_tests.count(".duel/feature_tests/index_of_string.c"), 1u);
  EXPECT_EQ(sealed.bug_tests.count(".duel/bug_tests/index_of_string_first.c"), 1u);
  EXPECT_EQ(to_json(pub).dump().find("SEALED_"), std::string::npos);

  MatchSide a{kAlice, &alice}, b{kBob, &bob};
  MatchConfig mc;
  mc.turns_per_player = 2;
  MatchRecord m = play_match(bank, a, b, repos, protocol, mc, "m-cjson");
  ASSERT_EQ(m.turns.size(), 4u);
  EXPECT_EQ(m.turns[0].red, kAlice);
  EXPECT_EQ(m.turns[0].extra["outcome"], "collapse");
  EXPECT_EQ(m.turns[0].extra["s_regression"], 1);
  EXPECT_EQ(m.turns[0].extra["s_feature"], 0);
  EXPECT_EQ(m.turns[0].blue_composite, 0.0);
  EXPECT_EQ(m.turns[1].red, kBob);
  EXPECT_EQ(m.turns[1].extra["outcome"], "clean_repair");
  EXPECT_EQ(m.turns[1].blue_composite, 1.0);
  EXPECT_EQ(m.turns[2].red, kAlice);
  EXPECT_EQ(m.turns[2].extra["outcome"], "latent_bug_ships");
  EXPECT_EQ(m.turns[2].extra["s_regression"], 1);
  EXPECT_EQ(m.turns[2].extra["s_feature"], 1);
  EXPECT_EQ(m.turns[2].extra["s_bugfix"], 0);
  EXPECT_TRUE(m.turns[3].auto_win);
  EXPECT_EQ(m.turns[3].blue, kAlice);
  EXPECT_EQ(m.turns[3].extra["reason"], "red_missing_challenge");
  EXPECT_EQ(*m.score_a, 4.0);
  EXPECT_EQ(*m.score_b, 0.0);
  EXPECT_EQ(m.outcome, Outcome::kAWins);

  // Nothing sealed reached Blue (each Blue session listed, read and grepped its workspace).
  int blue_trajectories = 0;
  for (const auto& e : fs::directory_iterator(protocol.work_dir + "/defense")) {
    if (e.path().filename().string().rfind("blue-", 0) != 0) continue;
    std::string t = spade::read_file((e.path() / "trajectory.json").string());
    ++blue_trajectories;
    EXPECT_EQ(t.find("SEALED_"), std::string::npos) << e.path();
    EXPECT_EQ(t.find("bug_tests"), std::string::npos) << e.path();
  }
  EXPECT_EQ(blue_trajectories, 3);
  if (!HasFailure()) fs::remove_all(work);  // workspaces carry cJSON's build tree; kept only to debug a failure
}
