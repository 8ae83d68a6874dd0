// Test adapters on recorded outputs (tests/evaldual/fixtures/outputs/README.md says which were
// recorded here and which transcribed).
#include <gtest/gtest.h>

#include "common/atomic_file.h"
#include "common/error.h"
#include "evaldual/adapters.h"
#include "tests/evaldual/duel_test_util.h"

using namespace spade::evaldual;
using spade::evaldual::testing::fixture;

namespace {
std::string out(const std::string& name) { return spade::read_file(fixture("outputs/" + name)); }
}  // namespace

TEST(DuelAdapters, PytestPass) {
  TestOutcome o = parse_pytest(out("pytest_pass.txt"), 0);
  EXPECT_TRUE(o.ok) << o.reason;
  EXPECT_EQ(o.passed, 2);
  EXPECT_EQ(o.total, 2);
}

TEST(DuelAdapters, PytestFailuresErrorsAndIds) {
  TestOutcome o = parse_pytest(out("pytest_fail_error.txt"), 1);
  EXPECT_FALSE(o.ok);
  EXPECT_EQ(o.passed, 2);
  EXPECT_EQ(o.failed, 1);
  EXPECT_EQ(o.errors, 1);
  EXPECT_EQ(o.skipped, 1);
  EXPECT_EQ(o.total, 4);
  EXPECT_EQ(o.failed_tests, (std::vector<std::string>{"test_mix.py::test_bad", "test_mix.py::test_uses_broken"}));
  TestOutcome x = parse_pytest(out("pytest_stop_first.txt"), 1);
  EXPECT_EQ(x.failed, 1);
  EXPECT_EQ(x.passed, 1);
  EXPECT_FALSE(x.ok);
}

TEST(DuelAdapters, PytestCollectionErrorAndNoTests) {
  TestOutcome c = parse_pytest(out("pytest_collect_error.txt"), 2);
  EXPECT_FALSE(c.ok);
  EXPECT_EQ(c.errors, 1);
  EXPECT_EQ(c.failed_tests, (std::vector<std::string>{"test_collect_err.py"}));
  TestOutcome n = parse_pytest(out("pytest_none.txt"), 5);
  EXPECT_FALSE(n.ok);
  EXPECT_EQ(n.total, 0);
  EXPECT_EQ(n.reason, "no tests ran");
  // A timeout fails even when the captured part looked fine.
  EXPECT_FALSE(parse_pytest(out("pytest_pass.txt"), -1).ok);
}

TEST(DuelAdapters, GoJsonFinalActionPerTest) {
  TestOutcome f = parse_go_test_json(out("go_json_fail.txt"), 1);
  EXPECT_FALSE(f.ok);
  EXPECT_EQ(f.passed, 1);
  EXPECT_EQ(f.failed, 1);
  EXPECT_EQ(f.skipped, 1);
  EXPECT_EQ(f.failed_tests, (std::vector<std::string>{"example.com/chi.TestMountedSubrouter"}));
  TestOutcome p = parse_go_test_json(out("go_json_pass.txt"), 0);
  EXPECT_TRUE(p.ok) << p.reason;
  EXPECT_EQ(p.passed, 3);  // TestB failed then passed on rerun: the final action counts
  EXPECT_EQ(p.failed, 0);
  // A package failure without a failing test (build error) is an error; rc must be 0.
  TestOutcome b = parse_go_test_json(
      "# example.com/chi\n./mux.go:3:1: syntax error\n"
      "{\"Action\":\"fail\",\"Package\":\"example.com/chi\",\"Elapsed\":0}\n", 1);
  EXPECT_EQ(b.errors, 1);
  EXPECT_FALSE(b.ok);
  EXPECT_FALSE(parse_go_test_json(out("go_json_pass.txt"), 1).ok);
}

TEST(DuelAdapters, MavenSummaryAndRcFallback) {
  TestOutcome f = parse_maven(out("maven_fail.txt"), 1);
  EXPECT_FALSE(f.ok);
  EXPECT_EQ(f.total, 5);  // the Results block: 5 run = 4 passed + 1 failure
  EXPECT_EQ(f.passed, 4);
  EXPECT_EQ(f.failed, 1);
  EXPECT_EQ(f.failed_tests, (std::vector<std::string>{"StackTest.popEmpty"}));
  TestOutcome p = parse_maven(out("maven_pass.txt"), 0);
  EXPECT_TRUE(p.ok) << p.reason;
  EXPECT_EQ(p.passed, 2);
  EXPECT_EQ(p.skipped, 1);
  TestOutcome c = parse_maven(out("maven_compile_error.txt"), 1);
  EXPECT_FALSE(c.summary_found);
  EXPECT_FALSE(c.ok);
  EXPECT_TRUE(parse_maven("[INFO] BUILD SUCCESS\n", 0).ok);
}

TEST(DuelAdapters, NodeTapCountsCancelledAsFailed) {
  TestOutcome p = parse_tap(out("node_tap_pass.txt"), 0);
  EXPECT_TRUE(p.ok) << p.reason;
  EXPECT_EQ(p.passed, 2);
  TestOutcome f = parse_tap(out("node_tap_fail.txt"), 1);
  EXPECT_FALSE(f.ok);
  EXPECT_EQ(f.passed, 2);
  EXPECT_EQ(f.failed, 3);
  EXPECT_EQ(f.skipped, 1);
  EXPECT_EQ(f.failed_tests, (std::vector<std::string>{"wrong", "inner bad", "suite"}));
  TestOutcome c = parse_tap(out("node_tap_cancelled.txt"), 1);
  EXPECT_FALSE(c.ok);
  EXPECT_EQ(c.failed, 1);
  EXPECT_EQ(c.passed, 1);
  // Plain TAP (mocha -R tap style) without node's counters: top-level lines.
  TestOutcome m = parse_tap("1..3\nok 1 a\nnot ok 2 b\nok 3 c # SKIP later\n# tests 3\n", 1);
  EXPECT_EQ(m.passed, 1);
  EXPECT_EQ(m.failed, 1);
  EXPECT_EQ(m.skipped, 1);
}

TEST(DuelAdapters, CtestAndC) {
  TestOutcome f = parse_ctest(out("ctest_fail.txt"), 8);
  EXPECT_FALSE(f.ok);
  EXPECT_EQ(f.passed, 2);
  EXPECT_EQ(f.failed, 1);
  EXPECT_EQ(f.failed_tests, (std::vector<std::string>{"vec_bad"}));
  TestOutcome p = parse_ctest(out("ctest_pass.txt"), 0);
  EXPECT_TRUE(p.ok) << p.reason;
  EXPECT_EQ(p.passed, 2);
  EXPECT_TRUE(parse_rc("", 0).ok);
  EXPECT_FALSE(parse_rc("Assertion failed", 134).ok);
  EXPECT_FALSE(parse_rc("", -1).ok);
}

TEST(DuelAdapters, DispatchAndUnknownAdapter) {
  EXPECT_EQ(parse_test_output("node", out("node_tap_pass.txt"), 0).adapter, "tap");
  try {
    parse_test_output("junit5", "", 0);
    FAIL();
  } catch (const spade::Error& e) {
    EXPECT_NE(std::string(e.what()).find("junit5"), std::string::npos);
  }
}
