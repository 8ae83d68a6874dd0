// Integration (ctest label `integration`): the arena's Go, JavaScript and Java repositories (issue 20;
// configs/duel/repos/{mapstructure,fastify-error,commons-codec}.yaml). Each is fetched, set up and its
// original suite run once in the sandbox as its baseline; the same suite run bare (no sandbox, the
// sandbox's cleared environment) must give the same counts. Go and JavaScript then go through a whole
// scripted Red attempt (feature, hidden bug, blind self-repair): every gate runs the repository's real
// suite and the spec's injected-test command, and admits the task. Java runs the injected-test
// command on a JUnit class on the pristine tree and on a tree with a planted bug.
// A test SKIPs (never fails) only when its source cannot be fetched (`apt-get source` without a
// deb-src entry or mirror; `npm pack` without the npm registry). Fetched sources and pristine copies
// are cached under the build tree (SPADE_TEST_TMP/debian_repos) and reused while their pin holds.
//
// Expected counts, from running each suite bare on this machine with the tools scripts/setup.sh
// installs, before writing this test:
//   mapstructure 1.5.0-2, `go test -json -count=1 ./...` (go 1.19.8): 136 tests and subtests pass;
//   @fastify/error 4.3.0, `node --test --test-reporter=tap test/*.test.js` (Node.js 20.20.2): 36 pass;
//   commons-codec 1.15-1, javac + JUnitCore (OpenJDK 17, JUnit 4.13.2): "OK (1155 tests)".
// The scripted sessions (tests/evaldual/fixtures/duel_scripts/{mapstructure,fastify-error}/) were run
// bare first: each feature test passes on d_f, each bug test fails on d and passes on d_f, and each
// fix restores d_f byte for byte.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <optional>

#include "common/atomic_file.h"
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

const std::string kRed = "red#replay";

std::string script(const std::string& repo, const std::string& name) {
  return spade::read_file(fixture("duel_scripts/" + repo + "/" + name));
}

// What setup recorded, and what `spade duel` loads back: the pin, a passing baseline of `passed` tests
// parsed by `adapter`, no pre-existing failures.
void expect_baseline(const PreparedRepo& repo, const std::string& pin_prefix, const std::string& adapter, int passed) {
  EXPECT_EQ(repo.pin.rfind(pin_prefix, 0), 0u) << repo.pin;
  ASSERT_TRUE(repo.baseline.ok) << repo.baseline.reason;
  EXPECT_EQ(repo.baseline.adapter, adapter);
  EXPECT_EQ(repo.baseline.passed, passed);
  EXPECT_TRUE(repo.pre_existing_failures.empty());
  const PreparedRepo loaded = load_prepared_repo(arena_cache_dir(), repo.spec.name);
  EXPECT_EQ(loaded.pin, repo.pin);
  EXPECT_EQ(loaded.baseline.passed, passed);
}

// The original suite bare on a copy of the pristine tree: the same counts as the sandboxed baseline.
void expect_bare_agrees(const PreparedRepo& repo) {
  std::string ws = fresh_dir(repo.spec.name + "-bare");
  copy_tree(repo.pristine_dir, ws);
  ProcessResult b = bare_run(repo.spec.test_command, ws);
  TestOutcome o = parse_test_output(repo.spec.adapter, b.output, b.rc);
  EXPECT_TRUE(o.ok) << o.reason << "\n" << b.output.substr(0, 2000);
  EXPECT_EQ(o.passed, repo.baseline.passed);
  EXPECT_EQ(o.failed, repo.baseline.failed);
  fs::remove_all(ws);
}

// One slot, one attempt: Red's three scripted sessions; every gate must admit the task.
void expect_scripted_task_admitted(const PreparedRepo& repo, const std::string& feature, const std::string& bug,
                                   const std::string& fix) {
  const std::string& name = repo.spec.name;
  std::string work = fresh_dir(name + "-red");
  ProtocolConfig protocol;
  HarnessConfig h;
  h.step_limit = 5;
  h.recovery_turns = 1;
  h.recovery_steps = 1;
  h.wall_clock_s = 600;
  h.command_limits.timeout_s = repo.spec.timeout_s;
  protocol.red_harness = h;
  protocol.blue_harness = h;
  protocol.work_dir = work + "/play";
  protocol.slots_per_repo = 1;
  protocol.attempts_per_slot = 1;
  ScriptedAgent red;
  red.add(name + "/red_a/s1/a1", {script(name, feature)});
  red.add(name + "/red_b/s1/a1", {script(name, bug)});
  red.add(name + "/red_c/s1/a1", {script(name, fix)});
  TaskBank bank(work + "/bank.sqlite");
  generate_bank(bank, red, kRed, {repo}, protocol);
  std::vector<AttemptRecord> attempts = bank.attempts(kRed, name);
  ASSERT_EQ(attempts.size(), 1u);
  const AttemptRecord& a = attempts[0];
  EXPECT_EQ(a.status, "admitted") << a.kind << "/" << a.gate << ": " << a.reason;
  for (const GateResult& g : a.gates) EXPECT_TRUE(g.passed) << g.gate << ": " << g.detail;
  std::vector<std::string> gates;
  for (const GateResult& g : a.gates) gates.push_back(g.gate);
  for (const char* g : {"feature_only.existing_tests", "feature_only.feature_tests", "existing_tests", "feature_tests",
                        "bug_tests"})
    EXPECT_NE(std::find(gates.begin(), gates.end(), g), gates.end()) << "gate " << g << " did not run";
  EXPECT_EQ(bank.slot_state(kRed, name, 1), SlotState::admitted);
  if (a.status == "admitted") {
    PublicBundle pub = bank.load_public(bank.task_ids(kRed, name).at(0));
    EXPECT_EQ(pub.language, repo.spec.language);
    EXPECT_EQ(pub.pr_diff.find(".duel"), std::string::npos);
    EXPECT_EQ(pub.pr_diff.find("duel_injected"), std::string::npos);  // the Go copies never reach a tree
    EXPECT_EQ(to_json(pub).dump().find("SEALED_"), std::string::npos);
  }
  if (!::testing::Test::HasFailure()) fs::remove_all(work);
}

}  // namespace

TEST(DuelLanguages, GoMapstructure) {
  std::string why;
  std::optional<PreparedRepo> repo = setup_or_skip_reason("mapstructure", &why);
  if (!repo) GTEST_SKIP() << why;
  expect_baseline(*repo, "debian:golang-github-mitchellh-mapstructure=1.5.0-2:sha256:", "go", 136);
  if (HasFatalFailure()) return;
  expect_bare_agrees(*repo);
  expect_scripted_task_admitted(*repo, "defaults_feature.sh", "defaults_bug.sh", "defaults_fix.sh");
}

TEST(DuelLanguages, JavascriptFastifyError) {
  std::string why;
  std::optional<PreparedRepo> repo = setup_or_skip_reason("fastify-error", &why);
  if (!repo) GTEST_SKIP() << why;
  expect_baseline(*repo, "npm:@fastify/error@4.3.0:sha256:", "tap", 36);
  if (HasFatalFailure()) return;
  expect_bare_agrees(*repo);
  expect_scripted_task_admitted(*repo, "summary_feature.sh", "summary_bug.sh", "summary_fix.sh");
}

TEST(DuelLanguages, JavaCommonsCodec) {
  std::string why;
  std::optional<PreparedRepo> repo = setup_or_skip_reason("commons-codec", &why);
  if (!repo) GTEST_SKIP() << why;
  expect_baseline(*repo, "debian:libcommons-codec-java=1.15-1:sha256:", "junit", 1155);
  if (HasFatalFailure()) return;

  // An injected JUnit class through the spec's command, in the sandbox: 3 tests pass on the pristine
  // tree; with the digit table's 'f' turned into 'e', the two tests that encode 0xf fail (by hand:
  // encodesEveryNibbleInLowerCase ends in "ef", decodesWhatItEncodes round-trips 15 and 0xff;
  // emptyStaysEmpty has no digit).
  std::string ws = fresh_dir("commons-codec-injected");
  copy_tree(repo->pristine_dir, ws);
  const std::string test_file = std::string(kDuelDir) + "/feature_tests/HexRoundTripTest.java";
  put(ws, test_file, script("commons-codec", "HexRoundTripTest.java"));
  SandboxOptions so;
  so.limits.timeout_s = repo->spec.timeout_s;
  WorkspaceSandbox sb(ws, so);
  CommandResult ok = sb.run(injected_test_command(repo->spec, {test_file}));
  TestOutcome o = parse_test_output(repo->spec.adapter, ok.output, ok.rc);
  EXPECT_TRUE(o.ok) << o.reason << "\n" << ok.output.substr(0, 3000);
  EXPECT_EQ(o.passed, 3);
  ASSERT_EQ(sb.run(script("commons-codec", "break_hex_digit.sh")).rc, 0);
  CommandResult bad = sb.run(injected_test_command(repo->spec, {test_file}));
  TestOutcome f = parse_test_output(repo->spec.adapter, bad.output, bad.rc);
  EXPECT_FALSE(f.ok);
  EXPECT_EQ(f.passed, 1);
  EXPECT_EQ(f.failed, 2);
  EXPECT_EQ(f.failed_tests, (std::vector<std::string>{"org.apache.commons.codec.binary.HexRoundTripTest.decodesWhatItEncodes",
                                                      "org.apache.commons.codec.binary.HexRoundTripTest.encodesEveryNibbleInLowerCase"}));
  if (!HasFailure()) fs::remove_all(ws);
}
