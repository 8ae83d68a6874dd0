// Repository specs and setup on the fixture repositories (pyfix: pytest; cfix: C).
#include <gtest/gtest.h>

#include <filesystem>

#include "common/atomic_file.h"
#include "common/error.h"
#include "evaldual/diff.h"
#include "evaldual/repo_spec.h"
#include "evaldual/workspace_sandbox.h"
#include "tests/evaldual/duel_test_util.h"

namespace fs = std::filesystem;
using namespace spade::evaldual;
using spade::evaldual::testing::fixture;
using spade::evaldual::testing::fresh_dir;
using spade::evaldual::testing::put;

namespace {
std::string expect_error(const std::string& yaml) {
  try {
    parse_repo_spec(yaml, "/x/repos/r.yaml");
  } catch (const spade::Error& e) {
    return e.what();
  }
  return "no error";
}
}  // namespace

TEST(DuelRepo, ParsesSourcesAndDefaults) {
  RepoSpec p = load_repo_spec(fixture("repos/pyfix.yaml"));
  EXPECT_EQ(p.name, "pyfix");
  EXPECT_EQ(p.source_kind, SourceKind::local);
  EXPECT_EQ(p.source, fs::weakly_canonical(fixture("repos/pyfix")).string());
  EXPECT_EQ(p.adapter, "pytest");
  EXPECT_EQ(injected_test_command(p, {".duel/tests/test_f.py"}),
            "python3 -m pytest -q -x -p no:cacheprovider '.duel/tests/test_f.py'");
  RepoSpec g = parse_repo_spec("name: chi\nsource: https://github.com/go-chi/chi.git\ncommit: v5.0.12\nlanguage: go\n"
                               "test_command: go test -json ./...\nadapter: go\ninjected_test_command: go test -json {tests}\n", "g.yaml");
  EXPECT_EQ(g.source_kind, SourceKind::git);
  EXPECT_EQ(g.commit, "v5.0.12");
  RepoSpec d = parse_repo_spec("name: cjson\nsource: debian:cjson=1.7.15-1\nlanguage: c\ntest_command: make test\nadapter: c\n", "d.yaml");
  EXPECT_EQ(d.source_kind, SourceKind::debian);
  EXPECT_EQ(d.source, "cjson=1.7.15-1");
  EXPECT_NE(d.injected_test_command.find("{tests}"), std::string::npos);
  RepoSpec n = parse_repo_spec("name: fe\nsource: npm:@fastify/error@4.3.0\nlanguage: javascript\n"
                               "test_command: node --test\nadapter: tap\n", "n.yaml");
  EXPECT_EQ(n.source_kind, SourceKind::npm);
  EXPECT_EQ(n.source, "@fastify/error@4.3.0");
  EXPECT_EQ(n.injected_test_command, "node --test --test-reporter=tap {tests}");
  EXPECT_EQ(parse_repo_spec("name: m\nsource: npm:ms@2.1.3\nlanguage: javascript\ntest_command: t\nadapter: tap\n", "m.yaml").source,
            "ms@2.1.3");
}

TEST(DuelRepo, ErrorsNameFileAndKey) {
  EXPECT_NE(expect_error("name: a\nsource: .\nlanguage: python\ntest_command: t\nadapter: pytest\nbogus: 1\n").find("r.yaml: unknown key 'bogus'"), std::string::npos);
  EXPECT_NE(expect_error("name: a\nsource: .\nlanguage: python\nadapter: pytest\n").find("missing required key 'test_command'"), std::string::npos);
  EXPECT_NE(expect_error("name: a\nsource: .\nlanguage: python\ntest_command: t\nadapter: junit5\n").find("unknown test adapter 'junit5'"), std::string::npos);
  EXPECT_NE(expect_error("name: a\nsource: https://x/y.git\nlanguage: go\ntest_command: t\nadapter: go\ninjected_test_command: go test {tests}\n").find("needs 'commit'"), std::string::npos);
  // npm sources pin an exact version: never a range, a tag or a bare name.
  for (const char* src : {"npm:ms", "npm:ms@^2.1.3", "npm:ms@latest", "npm:@scope@1.0.0", "\"npm:\""})
    EXPECT_NE(expect_error(std::string("name: a\nsource: ") + src + "\nlanguage: javascript\ntest_command: t\nadapter: tap\n")
                  .find("expected npm:NAME@X.Y.Z"),
              std::string::npos)
        << src;
  EXPECT_NE(expect_error("name: a\nsource: .\nlanguage: rust\ntest_command: t\nadapter: c\n").find("{tests}"), std::string::npos);
}

TEST(DuelRepo, SetupPythonFixtureRecordsBaselineAndPin) {
  std::string work = fresh_dir("work");
  RepoSpec spec = load_repo_spec(fixture("repos/pyfix.yaml"));
  PreparedRepo p = setup_repo(spec, work);
  EXPECT_TRUE(p.baseline.ok) << p.baseline.reason;
  EXPECT_EQ(p.baseline.passed, 3);
  EXPECT_TRUE(p.pre_existing_failures.empty());
  EXPECT_EQ(p.pin.rfind("sha256:", 0), 0u);
  EXPECT_TRUE(fs::exists(p.pristine_dir + "/textkit/words.py"));
  PreparedRepo l = load_prepared_repo(work, "pyfix");
  EXPECT_EQ(l.pin, p.pin);
  EXPECT_EQ(l.baseline.passed, 3);
  check_not_stale("t1", p.pin, l);
  EXPECT_THROW(check_not_stale("t1", "sha256:0000", l), spade::Error);
}

TEST(DuelRepo, SetupRecordsPreExistingFailuresAndStalePinsChange) {
  // A copy of pyfix with one already-failing test: setup records it; editing the source changes the pin.
  std::string src = fresh_dir("src");
  copy_tree(fixture("repos/pyfix"), src + "/pyfix");
  put(src, "pyfix/tests/test_broken.py", "def test_known_broken():\n    assert 1 == 2\n");
  put(src, "r.yaml", spade::read_file(fixture("repos/pyfix.yaml")));
  RepoSpec spec = load_repo_spec(src + "/r.yaml");
  std::string work = fresh_dir("work");
  PreparedRepo p = setup_repo(spec, work);
  EXPECT_FALSE(p.baseline.ok);
  EXPECT_EQ(p.pre_existing_failures, (std::vector<std::string>{"tests/test_broken.py::test_known_broken"}));
  put(src, "pyfix/textkit/slug.py", "# changed upstream\n" + spade::read_file(src + "/pyfix/textkit/slug.py"));
  PreparedRepo q = setup_repo(spec, work);
  EXPECT_NE(q.pin, p.pin);
  try {
    check_not_stale("task-7", p.pin, q);
    FAIL();
  } catch (const spade::Error& e) {
    EXPECT_NE(std::string(e.what()).find("stale task task-7"), std::string::npos);
  }
}

TEST(DuelRepo, SetupCFixtureAndInjectedTest) {
  std::string work = fresh_dir("work");
  PreparedRepo p = setup_repo(load_repo_spec(fixture("repos/cfix.yaml")), work);
  EXPECT_TRUE(p.baseline.ok) << p.baseline.reason;
  std::string ws = fresh_dir("ws");
  copy_tree(p.pristine_dir, ws);
  put(ws, ".duel/tests/t1.c", "#include \"vec.h\"\nint main(void){int v[]={1,2};return vec_sum(v,2)==3?0:1;}\n");
  WorkspaceSandbox sb(ws);
  CommandResult r = sb.run(injected_test_command(p.spec, {".duel/tests/t1.c"}));
  EXPECT_TRUE(parse_test_output("c", r.output, r.rc).ok) << r.output;
}
