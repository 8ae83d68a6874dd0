// SWE-Duel test adapters: turn a test runner's output and exit status into counts and a verdict
// (reference §4 "Test runner" table). One parser per runner; all share the pass rule
//   passed  <=>  total > 0 && failed == 0 && errors == 0 && not timed out
// plus the runner's own extras (go: rc 0; C: rc 0 is the whole rule; Maven: no summary -> rc).
//
// Thread-safety: pure functions of their arguments; thread-safe.
#pragma once
#include <string>
#include <vector>

namespace spade::evaldual {

/// What one test run showed.
struct TestOutcome {
  std::string adapter;                    // "pytest", "go", "maven", "tap", "ctest", "c"
  int passed = 0, failed = 0, errors = 0, skipped = 0;
  int total = 0;                          // passed + failed + errors (skipped not counted)
  std::vector<std::string> failed_tests;  // ids as the runner prints them (failures and errors)
  bool summary_found = false;             // the runner's summary line/events were found
  bool ok = false;                        // the pass rule above
  std::string reason;                     // why !ok ("2 failed", "no tests ran", "timed out", ...)
};

/// pytest -q: the last "N passed, M failed, K error(s), S skipped ... in T s" line, and the
/// "FAILED id" / "ERROR id" lines of the short summary. `rc` -1 (timeout) always fails.
TestOutcome parse_pytest(const std::string& output, int rc);

/// `go test -json`: the final action (pass/fail/skip) per (package, test); a package that fails
/// without any test failing counts as an error (build failure). Lines that are not JSON are ignored.
/// Also requires rc 0.
TestOutcome parse_go_test_json(const std::string& output, int rc);

/// Maven Surefire: the last "Tests run: N, Failures: F, Errors: E, Skipped: S" line (totals of the
/// "Results:" block); failed ids from the "[ERROR]   Class.method:LINE" lines. Without any summary the
/// verdict is rc == 0 (reference: "no summary -> rc").
TestOutcome parse_maven(const std::string& output, int rc);

/// TAP (node:test --test-reporter=tap, mocha -R tap): node's "# tests/# pass/# fail/# cancelled/
/// # skipped/# todo" counts when present, else the top-level "ok"/"not ok" lines; cancelled counts as
/// failed, TODO is neither; "# SKIP" is skipped.
TestOutcome parse_tap(const std::string& output, int rc);

/// ctest: "P% tests passed, F tests failed out of T" and the "The following tests FAILED:" list.
TestOutcome parse_ctest(const std::string& output, int rc);

/// C (compile the injected test with the repo's sources and run it): rc 0 passes; counted as one test.
TestOutcome parse_rc(const std::string& output, int rc);

/// Dispatches on the adapter name ("pytest", "go", "maven", "tap" (aliases "node", "mocha"), "ctest",
/// "c" (alias "rc")). Throws spade::Error naming the unknown adapter and the known ones.
TestOutcome parse_test_output(const std::string& adapter, const std::string& output, int rc);

/// The adapter names parse_test_output() accepts (canonical names only).
std::vector<std::string> adapter_names();

}  // namespace spade::evaldual
