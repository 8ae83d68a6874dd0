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

// Recorded with Debian 12's go 1.19.8 (fixtures/outputs/README.md): TestAdd passes, TestWrong fails,
// TestSkipped skips, TestTable's subtest "zero" passes and "bad" fails (so TestTable fails too): by the
// final action per (package, test), 2 passed, 3 failed, 1 skipped.
TEST(DuelAdapters, GoRecordedRunAndBuildFailure) {
  TestOutcome m = parse_go_test_json(out("go_json_recorded_mixed.txt"), 1);
  EXPECT_TRUE(m.summary_found);
  EXPECT_EQ(m.passed, 2);
  EXPECT_EQ(m.failed, 3);
  EXPECT_EQ(m.skipped, 1);
  EXPECT_EQ(m.errors, 0);
  EXPECT_EQ(m.failed_tests, (std::vector<std::string>{"example.com/gt.TestTable", "example.com/gt.TestTable/bad",
                                                      "example.com/gt.TestWrong"}));
  EXPECT_FALSE(m.ok);
  // A package that does not compile: go 1.19 prints no JSON at all, only "FAIL\tPKG [build failed]".
  TestOutcome b = parse_go_test_json(out("go_json_recorded_build_failed.txt"), 2);
  EXPECT_TRUE(b.summary_found);
  EXPECT_EQ(b.errors, 1);
  EXPECT_EQ(b.failed_tests, (std::vector<std::string>{"example.com/gt (package failed: build error or panic)"}));
  EXPECT_FALSE(b.ok);
  EXPECT_EQ(b.reason, "1 error(s)") << b.reason;
}

// Recorded with JUnit 4.13.2 (Debian's junit4) on OpenJDK 17 (fixtures/outputs/README.md).
TEST(DuelAdapters, JunitTextRunner) {
  // SampleTest: adds passes, wrongSum fails, throwsNpe errors (JUnit 4 counts it as a failure), one
  // @Ignore'd test (not run, not counted); OkTest: one passes. "Tests run: 4,  Failures: 2".
  TestOutcome f = parse_test_output("junit", out("junit_fail.txt"), 1);
  EXPECT_EQ(f.adapter, "junit");
  EXPECT_TRUE(f.summary_found);
  EXPECT_EQ(f.passed, 2);
  EXPECT_EQ(f.failed, 2);
  EXPECT_EQ(f.total, 4);
  EXPECT_EQ(f.failed_tests, (std::vector<std::string>{"p.SampleTest.wrongSum", "p.SampleTest.throwsNpe"}));
  EXPECT_FALSE(f.ok);
  TestOutcome p = parse_junit(out("junit_pass.txt"), 0);  // "OK (1 test)"
  EXPECT_TRUE(p.ok) << p.reason;
  EXPECT_EQ(p.passed, 1);
  EXPECT_FALSE(parse_junit(out("junit_pass.txt"), 1).ok);  // the runner's exit status must agree
  // A class that does not exist: JUnitCore reports one initializationError.
  TestOutcome m = parse_junit(out("junit_missing_class.txt"), 1);
  EXPECT_EQ(m.failed, 1);
  EXPECT_EQ(m.failed_tests, (std::vector<std::string>{"org.junit.runner.JUnitCommandLineParseResult.initializationError"}));
  EXPECT_FALSE(m.ok);
  // javac failed before the runner: no summary, never a pass.
  TestOutcome c = parse_junit("Foo.java:3: error: ';' expected\n1 error\n", 1);
  EXPECT_FALSE(c.summary_found);
  EXPECT_FALSE(c.ok);
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

// ---- pytest outcomes (issue 17): recorded with the real pytest 7.2.1 on fixtures/outputs/pytest_suite
// (commands in fixtures/outputs/README.md), plus the old and long-run summary formats built from
// pytest's source. How each outcome counts is adapters.h's parse_pytest() comment.

TEST(DuelAdapters, PytestEveryOutcomeCountedAndParametrisedIdsKeptWhole) {
  // "3 failed, 3 passed, 1 skipped, 1 deselected, 1 xfailed, 1 xpassed, 1 warning in 0.15s"; the strict
  // XPASS is one of pytest's 3 failed. Ids "test_param[a - b]" and "test_param[c]d]" contain " - " and an
  // unbalanced bracket; the captured stdout of the failing tests prints a summary line and a FAILED
  // line, neither of which counts.
  TestOutcome o = parse_pytest(out("pytest_outcomes_mixed.txt"), 1);
  EXPECT_EQ(o.passed, 3);
  EXPECT_EQ(o.failed, 3);
  EXPECT_EQ(o.errors, 0);
  EXPECT_EQ(o.skipped, 1);
  EXPECT_EQ(o.deselected, 1);
  EXPECT_EQ(o.xfailed, 1);
  EXPECT_EQ(o.xpassed, 1);
  EXPECT_EQ(o.warnings, 1);
  EXPECT_EQ(o.total, 3 + 3 + 1 + 1);
  EXPECT_FALSE(o.ok);
  EXPECT_EQ(o.reason, "3 failed");
  EXPECT_EQ(o.failed_tests, (std::vector<std::string>{"test_mix.py::test_param[a - b]", "test_mix.py::test_param[c]d]",
                                                      "test_mix.py::test_xps"}));
}

TEST(DuelAdapters, PytestXfailOnlyRunPassesAndXpassIsNotAPass) {
  // An expected failure ran: pytest exits 0, and so does the verdict (not "no tests ran").
  for (const char* f : {"pytest_xfail_only.txt", "pytest_xfail_only_verbose.txt"}) {
    TestOutcome x = parse_pytest(out(f), 0);
    EXPECT_TRUE(x.ok) << f << ": " << x.reason;
    EXPECT_EQ(x.xfailed, 1) << f;
    EXPECT_EQ(x.passed, 0) << f;
    EXPECT_EQ(x.total, 1) << f;
  }
  // A non-strict XPASS: the run passes (pytest exits 0) but nothing is counted as passed.
  TestOutcome xp = parse_pytest(out("pytest_xpass_only.txt"), 0);
  EXPECT_TRUE(xp.ok) << xp.reason;
  EXPECT_EQ(xp.passed, 0);
  EXPECT_EQ(xp.xpassed, 1);
  // xfail_strict: pytest reports the XPASS as a failure, and so do we.
  TestOutcome strict = parse_pytest(out("pytest_xpass_strict.txt"), 1);
  EXPECT_FALSE(strict.ok);
  EXPECT_EQ(strict.failed, 1);
  EXPECT_EQ(strict.failed_tests, (std::vector<std::string>{"test_xponly.py::test_b"}));
}

TEST(DuelAdapters, PytestSkippedOrDeselectedOnlyNeverPasses) {
  TestOutcome s = parse_pytest(out("pytest_skipped_only.txt"), 0);  // pytest exits 0 here
  EXPECT_FALSE(s.ok);
  EXPECT_EQ(s.skipped, 1);
  EXPECT_EQ(s.deselected, 9);
  EXPECT_EQ(s.reason, "no test ran to a verdict (1 skipped)");
  TestOutcome d = parse_pytest(out("pytest_none.txt"), 5);
  EXPECT_EQ(d.deselected, 2);
  EXPECT_EQ(d.reason, "no tests ran");
}

TEST(DuelAdapters, PytestCapturedOutputIsNeverTheSummary) {
  // -rN: no short summary, so the real summary follows the captured stdout directly and is the last line.
  TestOutcome c = parse_pytest(out("pytest_captured_no_short_summary.txt"), 1);
  EXPECT_EQ(c.failed, 2);
  EXPECT_EQ(c.passed, 1);
  EXPECT_EQ(c.deselected, 7);
  EXPECT_TRUE(c.failed_tests.empty());  // the printed "FAILED test_fake.py::..." lines are not pytest's
  // -s: the test's prints are on the progress lines; the summary-like line there is overridden by the
  // real one and the FAILED lines outside the short summary are ignored.
  TestOutcome s = parse_pytest(out("pytest_no_capture.txt"), 1);
  EXPECT_EQ(s.failed, 2);
  EXPECT_EQ(s.passed, 1);
  EXPECT_EQ(s.failed_tests, (std::vector<std::string>{"test_mix.py::test_param[a - b]", "test_mix.py::test_param[c]d]"}));
  // Output cut off inside a captured section (pytest killed): the captured line is not taken unless it
  // is the last line, and the exit status then decides (a kill is never rc 0 or 1 with no failure).
  std::string cut = out("pytest_captured_no_short_summary.txt");
  cut = cut.substr(0, cut.rfind("2 failed"));
  cut += "more captured text\n";
  TestOutcome k = parse_pytest(cut, 0);
  EXPECT_FALSE(k.summary_found);
  EXPECT_FALSE(k.ok);
}

TEST(DuelAdapters, PytestColourAndOldAndLongSummaryFormats) {
  // --color=yes wraps every count in ANSI codes.
  TestOutcome c = parse_pytest(out("pytest_color_warnings.txt"), 0);
  EXPECT_TRUE(c.ok) << c.reason;
  EXPECT_EQ(c.passed, 2);
  EXPECT_EQ(c.deselected, 8);
  EXPECT_EQ(c.warnings, 1);
  // pytest 4.x (fixtures/outputs/README.md): "seconds", "1 warnings", "2 error"; -q bare or between rules.
  TestOutcome old = parse_pytest("..F.\n=== 1 failed, 2 passed, 1 skipped, 1 xfailed, 1 warnings, 2 error in 0.17 seconds ===\n", 1);
  EXPECT_TRUE(old.summary_found);
  EXPECT_EQ(old.failed, 1);
  EXPECT_EQ(old.passed, 2);
  EXPECT_EQ(old.skipped, 1);
  EXPECT_EQ(old.xfailed, 1);
  EXPECT_EQ(old.warnings, 1);
  EXPECT_EQ(old.errors, 2);
  TestOutcome old_q = parse_pytest("..\n2 passed in 0.17 seconds\n", 0);
  EXPECT_TRUE(old_q.ok) << old_q.reason;
  EXPECT_EQ(old_q.passed, 2);
  TestOutcome none_old = parse_pytest("\nno tests ran in 0.01 seconds\n", 5);
  EXPECT_TRUE(none_old.summary_found);
  EXPECT_EQ(none_old.reason, "no tests ran");
  // pytest 7 over a minute: "75.20s (0:01:15)" (format_session_duration).
  TestOutcome slow = parse_pytest("....\n4 passed, 1 rerun in 75.20s (0:01:15)\n", 0);
  EXPECT_TRUE(slow.ok) << slow.reason;
  EXPECT_EQ(slow.passed, 4);  // "1 rerun" (pytest-rerunfailures) is ignored
}

TEST(DuelAdapters, PytestShortSummaryIds) {
  // Hand-built short-summary lines in pytest 7's form ("FAILED nodeid - message", the message optional).
  const std::string o =
      "=========================== short test summary info ============================\n"
      "FAILED t.py::test_p[[1]] - AssertionError: assert [1] - 2\n"
      "FAILED t.py::test_q[x - y-3] - ValueError: a - b\n"
      "FAILED t.py::TestK::test_r\n"
      "ERROR t.py::test_s[c[d] - RuntimeError\n"
      "XFAIL t.py::test_t - known\n"
      "3 failed, 1 error in 0.10s\n";
  TestOutcome t = parse_pytest(o, 1);
  EXPECT_EQ(t.failed_tests, (std::vector<std::string>{"t.py::test_p[[1]]", "t.py::test_q[x - y-3]", "t.py::TestK::test_r",
                                                      "t.py::test_s[c[d]"}));
}
