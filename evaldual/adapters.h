// SWE-Duel test adapters: turn a test runner's output and exit status into counts and a verdict
// (reference §4 "Test runner" table). One parser per runner; all share the pass rule
//   passed  <=>  total > 0 && failed == 0 && errors == 0 && not timed out
// plus the runner's own extras (go: rc 0; C: rc 0 is the whole rule; Maven: no summary -> rc).
// total counts the tests that ran to a verdict: passed + failed + errors + xfailed + xpassed; skipped
// and deselected tests did not run and never make a run pass.
//
// Thread-safety: pure functions of their arguments; thread-safe.
#pragma once
#include <string>
#include <vector>

namespace spade::evaldual {

/// What one test run showed.
struct TestOutcome {
  std::string adapter;                    // "pytest", "go", "maven", "junit", "tap", "ctest", "c"
  int passed = 0, failed = 0, errors = 0, skipped = 0;
  int xfailed = 0, xpassed = 0;           // pytest: expected failures / unexpected passes (not strict)
  int deselected = 0, warnings = 0;       // pytest: not run / warnings reported (no effect on the verdict)
  int total = 0;                          // passed + failed + errors + xfailed + xpassed
  std::vector<std::string> failed_tests;  // ids as the runner prints them (failures and errors)
  bool summary_found = false;             // the runner's summary line/events were found
  bool ok = false;                        // the pass rule above
  std::string reason;                     // why !ok ("2 failed", "no tests ran", "timed out", ...)
};

/// pytest (any verbosity): the final summary line, as pytest 4.x ("2 passed, 1 warnings, 1 error in
/// 0.17 seconds") and >= 5 ("2 passed, 1 warning, 2 errors in 0.17s", "in 75.20s (0:01:15)", "no
/// tests ran in 0.01s") print it, bare (-q) or between '=' rules; ANSI colour codes are ignored. The
/// summary is the last such line that is not inside a report section (FAILURES, ERRORS, PASSES,
/// warnings summary: where captured output is shown), unless it is the output's last line, so a test
/// that prints a summary-like line is never taken for pytest. Failed ids come only from the "FAILED id"
/// / "ERROR id" lines of the "short test summary info" section; an id ends at the " - " that follows
/// its complete (bracket-balanced) parametrisation, so "test_a[x - y]" and "test_b[[1]]" stay whole.
/// How each pytest outcome counts (pytest's own semantics, docs "How to use skip and xfail"):
///   passed -> passed; failed -> failed; error/errors -> errors;
///   xfailed (an expected failure happened) -> ran, not a failure: an xfail-only run passes, as pytest's
///     exit status 0 says;
///   xpassed (a non-strict xfail passed) -> ran, neither passed nor failed (pytest exits 0: the run
///     passes, but the test is not counted as a pass);
///   a strict xfail that passes (xfail_strict or strict=True) -> pytest itself reports it as failed
///     ("FAILED id" + "[XPASS(strict)]"), so it is counted in failed and fails the run;
///   skipped, deselected -> did not run; a run of only these fails ("no test ran to a verdict");
///   warnings -> counted only. Unknown words (plugins, e.g. "1 rerun") are ignored.
/// pytest's exit status must agree: 0, or 1 with a counted failure or error (2, 3, 4 = interrupted,
/// internal or usage error, 5 = no tests collected, always fail). `rc` -1 (timeout) always fails.
TestOutcome parse_pytest(const std::string& output, int rc);

/// `go test -json`: the final action (pass/fail/skip) per (package, test); a package that fails
/// without any test failing counts as an error (build failure), as does go's plain-text
/// "FAIL\tPKG [build failed]" / "[setup failed]" line (go 1.19-1.23 print no JSON for a package that
/// does not compile). Other lines that are not JSON are ignored. Also requires rc 0.
TestOutcome parse_go_test_json(const std::string& output, int rc);

/// Maven Surefire: the last "Tests run: N, Failures: F, Errors: E, Skipped: S" line (totals of the
/// "Results:" block); failed ids from the "[ERROR]   Class.method:LINE" lines. Without any summary the
/// verdict is rc == 0 (reference: "no summary -> rc").
TestOutcome parse_maven(const std::string& output, int rc);

/// JUnit 4's text runner (`java org.junit.runner.JUnitCore CLASS...`): "OK (N tests)" when every test
/// passed, else "Tests run: N,  Failures: F" (JUnit 4 counts errors as failures; ignored tests are
/// not in N), failed ids "Class.method" from the numbered "K) method(Class)" headers. Also requires
/// rc 0 (JUnitCore exits 1 on any failure). A compile error before the runner leaves no summary: fails.
TestOutcome parse_junit(const std::string& output, int rc);

/// TAP (node:test --test-reporter=tap, mocha -R tap): node's "# tests/# pass/# fail/# cancelled/
/// # skipped/# todo" counts when present, else the top-level "ok"/"not ok" lines; cancelled counts as
/// failed, TODO is neither; "# SKIP" is skipped.
TestOutcome parse_tap(const std::string& output, int rc);

/// ctest: "P% tests passed, F tests failed out of T" and the "The following tests FAILED:" list.
TestOutcome parse_ctest(const std::string& output, int rc);

/// C (compile the injected test with the repo's sources and run it): rc 0 passes; counted as one test.
TestOutcome parse_rc(const std::string& output, int rc);

/// Recomputes total, ok and reason from the counts by the shared pass rule (no runner extras): what a
/// caller uses after changing counts (e.g. deselecting pre-existing failures).
void apply_pass_rule(TestOutcome* o);

/// Dispatches on the adapter name ("pytest", "go", "maven", "junit", "tap" (aliases "node", "mocha"), "ctest",
/// "c" (alias "rc")). Throws spade::Error naming the unknown adapter and the known ones.
TestOutcome parse_test_output(const std::string& adapter, const std::string& output, int rc);

/// The adapter names parse_test_output() accepts (canonical names only).
std::vector<std::string> adapter_names();

}  // namespace spade::evaldual
