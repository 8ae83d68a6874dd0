// The full match of issue 6 on the fixture repositories with two scripted (replay) participants:
// admitted tasks, a Red attempt rejected by each gate, a clean repair, a latent bug that ships, a
// collapse, a missing-task auto-win, a draw; exact scores asserted; the sealed bug tests and bug
// description never reach Blue; the defense cache replays the match without re-scoring.
#include <gtest/gtest.h>

#include <filesystem>

#include "common/atomic_file.h"
#include "common/error.h"
#include "evaldual/duel_match.h"
#include "evaldual/protocol.h"
#include "evaldual/repo_spec.h"
#include "evaldual/task_bank.h"
#include "tests/evaldual/duel_test_util.h"

namespace fs = std::filesystem;
using namespace spade::evaldual;
using spade::evaldual::testing::fixture;
using spade::evaldual::testing::fresh_dir;

namespace {

const std::string kAlice = "alice#replay";
const std::string kBob = "bob#replay";

// ---- pyfix: Alice's feature (textkit.stats) ----
const std::string kAliceStats = R"(cat > textkit/stats.py <<'EOF'
"""Text statistics."""
from .words import _WORD


def average_word_length(text):
    """Mean word length (0.0 for no words), rounded to 2 places."""
    words = _WORD.findall(text)
    if not words:
        return 0.0
    total = sum(len(w) for w in words)
    return round(total / len(words), 2)


def longest_word(text):
    """The longest word (the first one on ties), or '' for no words."""
    best = ""
    for w in _WORD.findall(text):
        if len(w) > len(best):
            best = w
    return best
EOF)";
const std::string kAliceStatsTests = R"(mkdir -p .duel/feature_tests && cat > .duel/feature_tests/test_stats.py <<'EOF'
from textkit.stats import average_word_length, longest_word


def test_average_word_length():
    assert average_word_length("ab abcd") == 3.0
    assert average_word_length("") == 0.0


def test_longest_word():
    assert longest_word("a abc ab") == "abc"
    assert longest_word("") == ""
EOF)";
const std::string kAliceStatsMeta = R"(cat > .duel/metadata.json <<'EOF'
{"target_files": ["textkit/stats.py"], "exploration_summary": "textkit has words.py and slug.py",
 "feature_spec": "Add textkit.stats with average_word_length(text) (mean word length rounded to 2 places, 0.0 without words) and longest_word(text) (the longest word, the first one on ties, '' without words).",
 "feature_rationale": "Statistics complement count_words."}
EOF)";
const std::string kAliceStatsBug = "sed -i 's/if len(w) > len(best):/if len(w) >= len(best):/' textkit/stats.py";
const std::string kAliceStatsFix = "sed -i 's/if len(w) >= len(best):/if len(w) > len(best):/' textkit/stats.py";
const std::string kAliceStatsBugArtifacts = R"(mkdir -p .duel/bug_tests && cat > .duel/bug_tests/test_ties.py <<'EOF'
# SEALED_TOKEN_ALICE_PYFIX
from textkit.stats import longest_word


def test_longest_word_keeps_first_on_ties():
    assert longest_word("abc xyz") == "abc"
EOF
cat > .duel/bug.json <<'EOF'
{"bug_type": "comparison", "bug_description": "SEALED_DESC_ALICE_PYFIX: >= makes ties pick the last word", "bug_location": "textkit/stats.py:17"}
EOF)";

// ---- pyfix: Bob's feature (unique_slug) ----
const std::string kBobSlug = R"(cat >> textkit/slug.py <<'EOF'


def unique_slug(text, taken, sep="-"):
    """slugify(text), suffixed with sep + 2, 3, ... until it is not in taken."""
    base = slugify(text, sep)
    if base not in taken:
        return base
    n = 2
    while f"{base}{sep}{n}" in taken:
        n += 1
    return f"{base}{sep}{n}"
EOF
mkdir -p .duel/feature_tests && cat > .duel/feature_tests/test_unique_slug.py <<'EOF'
from textkit.slug import unique_slug


def test_unique_slug_free():
    assert unique_slug("Hello World", set()) == "hello-world"


def test_unique_slug_taken():
    assert unique_slug("Hello World", {"hello-world"}) == "hello-world-2"
    assert unique_slug("A b", {"a_b"}, sep="_") == "a_b_2"
EOF
cat > .duel/metadata.json <<'EOF'
{"target_files": ["textkit/slug.py"], "exploration_summary": "slug.py has slugify",
 "feature_spec": "Add textkit.slug.unique_slug(text, taken, sep='-'): slugify(text), suffixed with sep and 2, 3, ... until the result is not in taken.",
 "feature_rationale": "Unique slugs for URLs."}
EOF)";
const std::string kBobSlugBug = R"(sed -i 's/    while f"{base}{sep}{n}" in taken:/    if f"{base}{sep}{n}" in taken:/' textkit/slug.py
mkdir -p .duel/bug_tests && cat > .duel/bug_tests/test_many_taken.py <<'EOF'
# SEALED_TOKEN_BOB_PYFIX
from textkit.slug import unique_slug


def test_unique_slug_skips_all_taken():
    assert unique_slug("a", {"a", "a-2", "a-3"}) == "a-4"
EOF
cat > .duel/bug.json <<'EOF'
{"bug_type": "loop", "bug_description": "SEALED_DESC_BOB_PYFIX: checks only the first suffix", "bug_location": "textkit/slug.py:20"}
EOF)";
const std::string kBobSlugFix = R"(sed -i 's/    if f"{base}{sep}{n}" in taken:/    while f"{base}{sep}{n}" in taken:/' textkit/slug.py)";

// ---- cfix: Bob's feature (vec_count_above, vec_min) ----
const std::string kBobVec = R"(cat >> src/vec.c <<'EOF'

int vec_count_above(const int *v, int n, int threshold) {
  int c = 0;
  for (int i = 0; i < n; ++i)
    if (v[i] > threshold) ++c;
  return c;
}

int vec_min(const int *v, int n) {
  int m = v[0];
  for (int k = 1; k < n; ++k)
    if (v[k] < m) m = v[k];
  return m;
}
EOF
sed -i 's/^#endif$/int vec_count_above(const int *v, int n, int threshold);\nint vec_min(const int *v, int n);\n#endif/' src/vec.h
mkdir -p .duel/feature_tests && cat > .duel/feature_tests/test_feature.c <<'EOF'
#include <assert.h>
#include "vec.h"

int main(void) {
  int v[] = {5, 1, 9, 3};
  assert(vec_count_above(v, 4, 4) == 2);
  assert(vec_min(v, 4) == 1);
  return 0;
}
EOF
cat > .duel/metadata.json <<'EOF'
{"target_files": ["src/vec.c", "src/vec.h"], "exploration_summary": "vec has sum and max",
 "feature_spec": "Add vec_count_above(v, n, threshold) (elements > threshold) and vec_min(v, n).",
 "feature_rationale": "Completes the vector API."}
EOF)";
const std::string kBobVecBug = R"(sed -i 's/k < n; ++k/k < n - 1; ++k/' src/vec.c
mkdir -p .duel/bug_tests && cat > .duel/bug_tests/test_min_last.c <<'EOF'
/* SEALED_TOKEN_BOB_CFIX */
#include <assert.h>
#include "vec.h"

int main(void) {
  int v[] = {4, 6, 2};
  assert(vec_min(v, 3) == 2);
  return 0;
}
EOF
cat > .duel/bug.json <<'EOF'
{"bug_type": "off-by-one", "bug_description": "SEALED_DESC_BOB_CFIX: vec_min skips the last element", "bug_location": "src/vec.c:26"}
EOF)";
const std::string kBobVecFix = "sed -i 's/k < n - 1; ++k/k < n; ++k/' src/vec.c";

// ---- cfix: Alice's feature (vec_count_above with exactly 10 added lines) ----
const std::string kAliceVec = R"(cat >> src/vec.c <<'EOF'

int vec_count_above(const int *v, int n, int threshold) {
  int c = 0;
  for (int i = 0; i < n; ++i)
    if (v[i] > threshold)
      ++c;
  return c;
}
EOF
sed -i 's/^#endif$/\/* vec_count_above: how many elements exceed threshold. *\/\nint vec_count_above(const int *v, int n, int threshold);\n#endif/' src/vec.h
mkdir -p .duel/feature_tests && cat > .duel/feature_tests/test_count.c <<'EOF'
#include <assert.h>
#include "vec.h"

int main(void) {
  int v[] = {5, 1, 9, 3};
  assert(vec_count_above(v, 4, 4) == 2);
  assert(vec_count_above(v, 4, 100) == 0);
  return 0;
}
EOF
cat > .duel/metadata.json <<'EOF'
{"target_files": ["src/vec.c"], "exploration_summary": "vec has sum and max",
 "feature_spec": "Add vec_count_above(v, n, threshold): the number of elements greater than threshold.",
 "feature_rationale": "Counting is common."}
EOF)";
const std::string kAliceVecBugArtifacts = R"(mkdir -p .duel/bug_tests && cat > .duel/bug_tests/test_strict.c <<'EOF'
/* SEALED_TOKEN_ALICE_CFIX */
#include <assert.h>
#include "vec.h"

int main(void) {
  int v[] = {4, 5};
  assert(vec_count_above(v, 2, 4) == 1);
  return 0;
}
EOF
cat > .duel/bug.json <<'EOF'
{"bug_type": "comparison", "bug_description": "SEALED_DESC_ALICE_CFIX: >= counts equal elements", "bug_location": "src/vec.c:18"}
EOF)";

const std::string kLeakProbe = "find . -type f | sort; cat .duel/feature_tests/*; grep -rl \"SEAL\"\"ED_\" . /tmp; true";

struct Arena {
  std::string work;
  std::vector<PreparedRepo> repos;
  ProtocolConfig protocol;
};

Arena make_arena() {
  Arena a;
  a.work = fresh_dir("arena");
  for (const char* r : {"pyfix", "cfix"})
    a.repos.push_back(setup_repo(load_repo_spec(fixture(std::string("repos/") + r + ".yaml")), a.work + "/repos"));
  HarnessConfig h;
  h.step_limit = 10;
  h.recovery_turns = 1;
  h.recovery_steps = 1;
  h.wall_clock_s = 120;
  h.command_limits.timeout_s = 30;
  a.protocol.red_harness = h;
  a.protocol.blue_harness = h;
  a.protocol.work_dir = a.work + "/play";
  return a;
}

ScriptedAgent make_alice() {
  ScriptedAgent s;
  std::string orig_c = spade::read_file(fixture("repos/cfix/src/vec.c"));
  std::string orig_h = spade::read_file(fixture("repos/cfix/src/vec.h"));
  std::string wrong_tests = kAliceStatsTests;
  wrong_tests.replace(wrong_tests.find("== 3.0"), 6, "== 4.0");
  // pyfix, slot 1: five attempts, the last admitted.
  s.add("pyfix/red_a/s1/a1", {"echo exploring; ls"});                              // incomplete-feature
  s.add("pyfix/red_a/s1/a2", {kAliceStats, wrong_tests, kAliceStatsMeta});          // feature-gate
  for (const char* a : {"a3", "a4", "a5"})
    s.add(std::string("pyfix/red_a/s1/") + a, {kAliceStats, kAliceStatsTests, kAliceStatsMeta});
  s.add("pyfix/red_b/s1/a3", {kAliceStatsBugArtifacts});                            // bug_tests: no bug embedded
  s.add("pyfix/red_b/s1/a4", {kAliceStatsBug, kAliceStatsBugArtifacts});            // self_review fails (no C fix)
  s.add("pyfix/red_b/s1/a5", {kAliceStatsBug, kAliceStatsBugArtifacts});
  s.add("pyfix/red_c/s1/a5", {kAliceStatsFix});                                     // admitted
  // cfix, slot 1: five failures -> exhausted.
  s.add("cfix/red_a/s1/a1", {kBobVec});
  s.add("cfix/red_b/s1/a1", {"sed -i 's/if (v\\[i\\] > m) m = v\\[i\\];/if (v[i] < m) m = v[i];/' src/vec.c",
                             kAliceVecBugArtifacts});                               // existing_tests
  for (const char* a : {"a2", "a3", "a4", "a5"}) s.add(std::string("cfix/red_a/s1/") + a, {kAliceVec});
  s.add("cfix/red_b/s1/a2", {"sed -i '/if (v\\[i\\] > threshold)$/{N;s/if (v\\[i\\] > threshold)\\n      ++c;/if (v[i] >= threshold) ++c;/}' src/vec.c",
                             kAliceVecBugArtifacts});                               // complexity (9 lines)
  s.add("cfix/red_b/s1/a3", {"cat > src/vec.c <<'EOF'\n" + orig_c + "EOF", "cat > src/vec.h <<'EOF'\n" + orig_h + "EOF",
                             kAliceVecBugArtifacts});                               // diff_valid (empty)
  s.add("cfix/red_b/s1/a4", {"sed -i 's/  return c;/  return c + 1;/' src/vec.c", kAliceVecBugArtifacts});  // feature_tests
  // a5: session B writes nothing -> incomplete-bug.
  // Blue: a clean repair of Bob's pyfix task; Bob's cfix bug ships (no change).
  s.add("pyfix/blue/" + kBob + "/s1", {kLeakProbe, kBobSlugFix});
  s.add("cfix/blue/" + kBob + "/s1", {kLeakProbe});
  return s;
}

ScriptedAgent make_bob() {
  ScriptedAgent s;
  s.add("pyfix/red_a/s1/a1", {kBobSlug});
  s.add("pyfix/red_b/s1/a1", {kBobSlugBug});
  s.add("pyfix/red_c/s1/a1", {kBobSlugFix});
  s.add("cfix/red_a/s1/a1", {kBobVec});
  s.add("cfix/red_b/s1/a1", {kBobVecBug});
  s.add("cfix/red_c/s1/a1", {kBobVecFix});
  // Blue on Alice's pyfix task: breaks average_word_length -> collapse (T_f fails).
  s.add("pyfix/blue/" + kAlice + "/s1", {kLeakProbe, "sed -i 's/return round(total \\/ len(words), 2)/return 0.0/' textkit/stats.py"});
  return s;
}

std::vector<std::string> kinds(const std::vector<AttemptRecord>& as) {
  std::vector<std::string> k;
  for (const auto& a : as) k.push_back(a.status == "admitted" ? "admitted" : a.kind + "/" + a.gate);
  return k;
}

}  // namespace

TEST(DuelMatch, FullMatchOnFixtureRepos) {
  Arena arena = make_arena();
  ASSERT_TRUE(arena.repos[0].baseline.ok && arena.repos[1].baseline.ok);
  TaskBank bank(arena.work + "/bank.sqlite");
  ScriptedAgent alice = make_alice(), bob = make_bob();
  generate_bank(bank, alice, kAlice, arena.repos, arena.protocol);
  generate_bank(bank, bob, kBob, arena.repos, arena.protocol);

  // Red attempts: one rejected by each gate, in the order the protocol checks them.
  EXPECT_EQ(kinds(bank.attempts(kAlice, "pyfix")),
            (std::vector<std::string>{"incomplete-feature/", "feature-gate/feature_tests", "validation/bug_tests",
                                      "validation/self_review", "admitted"}));
  EXPECT_EQ(kinds(bank.attempts(kAlice, "cfix")),
            (std::vector<std::string>{"validation/existing_tests", "validation/complexity", "validation/diff_valid",
                                      "validation/feature_tests", "incomplete-bug/"}));
  auto cfix_attempts = bank.attempts(kAlice, "cfix");
  EXPECT_NE(cfix_attempts[1].reason.find("9 lines added (min 10)"), std::string::npos) << cfix_attempts[1].reason;
  EXPECT_EQ(cfix_attempts[2].reason, "empty diff");
  EXPECT_EQ(kinds(bank.attempts(kBob, "pyfix")), std::vector<std::string>{"admitted"});
  EXPECT_EQ(kinds(bank.attempts(kBob, "cfix")), std::vector<std::string>{"admitted"});
  EXPECT_EQ(bank.slot_state(kAlice, "pyfix", 1), SlotState::admitted);
  EXPECT_EQ(bank.slot_state(kAlice, "cfix", 1), SlotState::exhausted);
  EXPECT_TRUE(bank.task_ids(kAlice, "cfix").empty());
  // An exhausted slot is never regenerated.
  generate_bank(bank, alice, kAlice, arena.repos, arena.protocol);
  EXPECT_EQ(bank.attempts(kAlice, "cfix").size(), 5u);

  // Admitted task content: the public bundle has no .duel paths in d; the sealed part holds T_b.
  std::string alice_task = bank.task_ids(kAlice, "pyfix").at(0);
  PublicBundle pub = bank.load_public(alice_task);
  SealedBundle sealed = bank.load_sealed(alice_task);
  EXPECT_EQ(pub.pr_diff.find(".duel"), std::string::npos);
  EXPECT_NE(pub.pr_diff.find("+        if len(w) >= len(best):"), std::string::npos);
  EXPECT_EQ(sealed.bug_tests.count(".duel/bug_tests/test_ties.py"), 1u);
  EXPECT_EQ(to_json(pub).dump().find("SEALED_"), std::string::npos);
  std::string prompt = blue_prompt(arena.repos[0], pub);
  EXPECT_EQ(prompt.find("SEALED_"), std::string::npos);
  EXPECT_EQ(prompt.find("bug"), std::string::npos) << "the prompt must not say a bug exists";

  MatchSide a{kAlice, &alice}, b{kBob, &bob};
  MatchConfig mc;
  mc.turns_per_player = 1;
  MatchRecord m = play_match(bank, a, b, arena.repos, arena.protocol, mc, "m-0001");
  ASSERT_EQ(m.turns.size(), 4u);
  // pyfix: Bob defends Alice's task and breaks the feature (collapse): a Red point for Alice.
  EXPECT_EQ(m.turns[0].red, kAlice);
  EXPECT_EQ(m.turns[0].extra["outcome"], "collapse");
  EXPECT_EQ(m.turns[0].extra["s_regression"], 1);
  EXPECT_EQ(m.turns[0].extra["s_feature"], 0);
  EXPECT_EQ(m.turns[0].blue_composite, 0.0);
  // pyfix: Alice repairs Bob's task cleanly: a Blue point for Alice.
  EXPECT_EQ(m.turns[1].red, kBob);
  EXPECT_EQ(m.turns[1].extra["outcome"], "clean_repair");
  EXPECT_EQ(m.turns[1].blue_composite, 1.0);
  // cfix: Alice's slot is exhausted: Bob wins automatically.
  EXPECT_TRUE(m.turns[2].auto_win);
  EXPECT_EQ(m.turns[2].blue, kBob);
  EXPECT_EQ(m.turns[2].extra["reason"], "red_missing_challenge");
  // cfix: Alice leaves Bob's PR as it is: the latent bug ships, a Red point for Bob.
  EXPECT_EQ(m.turns[3].extra["outcome"], "latent_bug_ships");
  EXPECT_EQ(m.turns[3].extra["s_regression"], 1);
  EXPECT_EQ(m.turns[3].extra["s_feature"], 1);
  EXPECT_EQ(m.turns[3].extra["s_bugfix"], 0);
  EXPECT_EQ(*m.score_a, 2.0);
  EXPECT_EQ(*m.score_b, 2.0);
  EXPECT_EQ(m.outcome, Outcome::kDraw);

  // Nothing sealed reached Blue: every Blue trajectory (which listed and grepped its workspace).
  int blue_trajectories = 0;
  for (const auto& e : fs::directory_iterator(arena.protocol.work_dir + "/defense")) {
    if (e.path().filename().string().rfind("blue-", 0) != 0) continue;
    std::string t = spade::read_file((e.path() / "trajectory.json").string());
    ++blue_trajectories;
    EXPECT_EQ(t.find("SEALED_"), std::string::npos) << e.path();
    EXPECT_EQ(t.find("bug_tests"), std::string::npos) << e.path();
    EXPECT_EQ(t.find("bug.json"), std::string::npos) << e.path();
  }
  EXPECT_EQ(blue_trajectories, 3);

  // Spend (replay agents: tokens are the reply's words, cost 0): the match's tokens are its turns',
  // which are the Blue sessions' steps as their trajectory files record them; the admitted task's
  // tokens are those of its attempt's sessions A, B and C.
  int64_t blue_tokens = 0, turn_tokens = 0;
  for (const auto& e : fs::directory_iterator(arena.protocol.work_dir + "/defense"))
    if (e.path().filename().string().rfind("blue-", 0) == 0) {
      const nlohmann::json trajectory = nlohmann::json::parse(spade::read_file((e.path() / "trajectory.json").string()));
      for (const auto& step : trajectory["steps"]) blue_tokens += step["tokens"].get<int64_t>();
    }
  for (const TurnRecord& t : m.turns) turn_tokens += t.extra.value("tokens", int64_t{0});
  EXPECT_GT(blue_tokens, 0);
  EXPECT_EQ(turn_tokens, blue_tokens);
  EXPECT_EQ(m.extra["tokens"].get<int64_t>(), blue_tokens);
  EXPECT_EQ(m.extra["cost"].get<double>(), 0.0);
  int64_t task_tokens = 0;
  const std::vector<AttemptRecord> alice_attempts = bank.attempts(kAlice, "pyfix");
  for (const auto& [session, json_text] : alice_attempts.at(4).trajectories) {
    const nlohmann::json trajectory = nlohmann::json::parse(json_text);
    for (const auto& step : trajectory["steps"]) task_tokens += step["tokens"].get<int64_t>();
  }
  EXPECT_GT(task_tokens, 0);
  EXPECT_EQ(bank.load_record(alice_task).tokens, task_tokens);

  // The record is what the ratings layer reads.
  MatchRecord back = match_from_json(match_to_json(m), "test");
  EXPECT_EQ(back.turns.size(), 4u);

  // Replaying uses the defense cache (no Blue sessions opened) and gives the same result.
  size_t opened_alice = alice.opened().size(), opened_bob = bob.opened().size();
  MatchRecord again = play_match(bank, a, b, arena.repos, arena.protocol, mc, "m-0002");
  EXPECT_EQ(alice.opened().size(), opened_alice);
  EXPECT_EQ(bob.opened().size(), opened_bob);
  EXPECT_EQ(*again.score_a, 2.0);
  EXPECT_EQ(again.turns[1].extra["cached"], true);
  EXPECT_EQ(again.extra["tokens"], 0);  // no session ran

  // Every attempt kept its session trajectories (A, B, C as far as it got).
  auto alice_py = bank.attempts(kAlice, "pyfix");
  EXPECT_EQ(alice_py[0].trajectories.size(), 1u);  // stopped after A
  EXPECT_EQ(alice_py[4].trajectories.size(), 3u);  // admitted: A, B, C

  // The worker count does not change the record: the same match replayed without the defense cache
  // by one worker (every Blue session and scoring run again) equals the first, played by 5 workers.
  EXPECT_EQ(mc.workers, 5);
  MatchConfig serial = mc;
  serial.workers = 1;
  serial.use_defense_cache = false;
  MatchRecord one = play_match(bank, a, b, arena.repos, arena.protocol, serial, "m-0001");
  ASSERT_EQ(one.turns.size(), m.turns.size());
  for (size_t i = 0; i < m.turns.size(); ++i) EXPECT_EQ(turn_to_json(one.turns[i]), turn_to_json(m.turns[i])) << i;
  EXPECT_EQ(*one.score_a, *m.score_a);
  EXPECT_EQ(one.extra["tokens"], m.extra["tokens"]);

  // A repository whose pin moved makes its tasks stale: the match refuses them.
  std::vector<PreparedRepo> moved = arena.repos;
  moved[0].pin = "sha256:moved";
  try {
    play_match(bank, a, b, moved, arena.protocol, mc, "m-0003");
    FAIL() << "a stale task was played";
  } catch (const spade::Error& e) {
    EXPECT_NE(std::string(e.what()).find("stale task"), std::string::npos) << e.what();
  }
}

TEST(DuelMatch, EmptyBankMatchSaysItCarriesNoInformation) {
  // Issue 17: with no task on either side every turn is an automatic Blue win and the totals tie
  // (1 - 1 with one task slot on one repository); the record must say that the draw means nothing.
  TaskBank bank(fresh_dir("empty_bank") + "/bank.sqlite");
  PreparedRepo repo;
  repo.spec.name = "pyfix";
  ScriptedAgent a, b;
  MatchConfig mc;
  mc.turns_per_player = 1;
  ProtocolConfig protocol;
  protocol.work_dir = fresh_dir("empty_bank_play");
  MatchRecord m = play_match(bank, {kAlice, &a}, {kBob, &b}, {repo}, protocol, mc, "m-empty");
  ASSERT_EQ(m.turns.size(), 2u);
  for (const TurnRecord& t : m.turns) EXPECT_TRUE(t.auto_win);
  EXPECT_EQ(*m.score_a, 1.0);
  EXPECT_EQ(*m.score_b, 1.0);
  EXPECT_EQ(m.outcome, Outcome::kDraw);
  EXPECT_EQ(contested_turns(m), 0);
  ASSERT_TRUE(m.extra.contains("warning"));
  EXPECT_NE(m.extra["warning"].get<std::string>().find("no contested turn"), std::string::npos);
  EXPECT_EQ(match_to_json(m)["warning"], m.extra["warning"]);  // written with the record
}
