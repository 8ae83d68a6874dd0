// Repository setup details (evaldual/repo_spec.h) and the shipped Debian repository specs
// (configs/duel/repos/*.yaml). Nothing here fetches from a mirror; the end-to-end runs on the real
// Debian packages are tests/evaldual/integration/test_duel_debian.cpp (label `integration`).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "common/atomic_file.h"
#include "common/error.h"
#include "evaldual/diff.h"
#include "evaldual/repo_spec.h"
#include "tests/evaldual/duel_test_util.h"

namespace fs = std::filesystem;
using namespace spade::evaldual;
using spade::evaldual::testing::fixture;
using spade::evaldual::testing::fresh_dir;
using spade::evaldual::testing::put;

namespace {
std::string config(const std::string& rel) { return std::string(SPADE_SOURCE_DIR) + "/configs/duel/repos/" + rel; }
bool has(const std::vector<std::string>& v, const std::string& x) { return std::find(v.begin(), v.end(), x) != v.end(); }
}  // namespace

// The shipped specs: pinned Debian 12 versions (`apt-cache showsrc cjson` / `toolz` on bookworm list
// 1.7.15-1+deb12u4 and 0.12.0-1), the runner adapters, and the paths kept out of diffs.
TEST(DuelRepoSetup, ShippedDebianSpecsParse) {
  RepoSpec c = load_repo_spec(config("cjson.yaml"));
  EXPECT_EQ(c.source_kind, SourceKind::debian);
  EXPECT_EQ(c.source, "cjson=1.7.15-1+deb12u4");
  EXPECT_EQ(c.language, "c");
  EXPECT_EQ(c.adapter, "ctest");
  EXPECT_EQ(c.setup.size(), 2u);
  EXPECT_TRUE(has(c.exclude_paths, "build") && has(c.exclude_paths, ".pc"));
  EXPECT_TRUE(has(c.protected_paths, "tests") && has(c.protected_paths, "CMakeLists.txt"));
  EXPECT_TRUE(is_excluded("build/CMakeCache.txt", c.diff_options()));
  EXPECT_FALSE(is_excluded("cJSON.c", c.diff_options()));
  EXPECT_EQ(injected_test_command(c, {".duel/feature_tests/a.c"}),
            "for t in '.duel/feature_tests/a.c'; do gcc -std=c89 -DENABLE_LOCALES -Itests -o /tmp/injected \"$t\" "
            "tests/unity/src/unity.c -lm && /tmp/injected || exit 1; done");

  RepoSpec t = load_repo_spec(config("toolz.yaml"));
  EXPECT_EQ(t.source_kind, SourceKind::debian);
  EXPECT_EQ(t.source, "toolz=0.12.0-1");
  EXPECT_EQ(t.adapter, "pytest");
  EXPECT_TRUE(has(t.protected_paths, "toolz/tests"));
  EXPECT_TRUE(is_excluded(".pc/applied-patches", t.diff_options()));
}

// A pristine copy is reused only while both the pin and the setup commands are unchanged.
TEST(DuelRepoSetup, PristineReusedOnlyForSameSetupCommands) {
  std::string src = fresh_dir("src");
  copy_tree(fixture("repos/pyfix"), src + "/pyfix");
  std::string base = spade::read_file(fixture("repos/pyfix.yaml"));
  put(src, "one.yaml", base + "setup: [\"echo one > marker.txt\"]\n");
  put(src, "two.yaml", base + "setup: [\"echo two > marker.txt\"]\n");
  std::string work = fresh_dir("work");
  PreparedRepo p = setup_repo(load_repo_spec(src + "/one.yaml"), work);
  EXPECT_EQ(spade::read_file(p.pristine_dir + "/marker.txt"), "one\n");
  // Same spec again: the pristine copy (with a file only it has) is kept.
  put(p.pristine_dir, "kept.txt", "x");
  PreparedRepo again = setup_repo(load_repo_spec(src + "/one.yaml"), work);
  EXPECT_TRUE(fs::exists(again.pristine_dir + "/kept.txt"));
  EXPECT_EQ(again.pin, p.pin);
  // Changed setup commands: rebuilt from the source.
  PreparedRepo other = setup_repo(load_repo_spec(src + "/two.yaml"), work);
  EXPECT_EQ(spade::read_file(other.pristine_dir + "/marker.txt"), "two\n");
  EXPECT_FALSE(fs::exists(other.pristine_dir + "/kept.txt"));
  EXPECT_EQ(other.pin, p.pin);  // the pin names the source, not the setup
}

// A Debian package that cannot be fetched: the error names the `apt-get source` call and what it
// needs, and no half-fetched source directory is left to be mistaken for the package next time.
TEST(DuelRepoSetup, DebianFetchFailureIsNamedAndLeavesNothing) {
  if (!fs::exists("/usr/bin/apt-get")) GTEST_SKIP() << "no apt-get on this machine";
  std::string work = fresh_dir("work");
  RepoSpec s = parse_repo_spec("name: nosuch\nsource: debian:spade-no-such-package=0.0-0\nlanguage: c\n"
                               "test_command: make check\nadapter: c\n", "nosuch.yaml");
  try {
    setup_repo(s, work);
    FAIL() << "a package that does not exist was fetched";
  } catch (const spade::Error& e) {
    std::string w = e.what();
    EXPECT_NE(w.find("nosuch.yaml: `apt-get source spade-no-such-package=0.0-0` failed"), std::string::npos) << w;
    EXPECT_NE(w.find("deb-src"), std::string::npos) << w;
  }
  EXPECT_FALSE(fs::exists(work + "/nosuch/src"));
  EXPECT_FALSE(fs::exists(work + "/nosuch/repo.json"));
}
