// Diffs: generation on real trees with GNU diff, parsing, validation, stats, per-file application.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>

#include "common/atomic_file.h"
#include "common/error.h"
#include "evaldual/diff.h"
#include "evaldual/process.h"
#include "tests/evaldual/duel_test_util.h"

namespace fs = std::filesystem;
using namespace spade::evaldual;
using spade::evaldual::testing::fresh_dir;
using spade::evaldual::testing::put;

namespace {

const char* kCalc =
    "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n\n\n"
    "def mul(a, b):\n    return a * b\n\n\ndef div(a, b):\n    return a / b\n";

struct Trees {
  std::string pristine, work;
};

Trees make_trees() {
  Trees t{fresh_dir("pristine"), fresh_dir("work")};
  for (const auto& d : {t.pristine, t.work}) {
    put(d, "pkg/calc.py", kCalc);
    put(d, "README", "calc\n");
    put(d, "pkg/old.py", "x = 1\n");
    put(d, "build/out.txt", "built\n");
  }
  return t;
}

}  // namespace

TEST(DuelDiff, PerFileSortedWithPrefixesSkippingExcludedBinaryAndBackups) {
  Trees t = make_trees();
  std::string calc = kCalc;
  calc.replace(calc.find("a - b"), 5, "a - b - 0");
  put(t.work, "pkg/calc.py", calc);
  put(t.work, "a_new.py", "print('new')\n");
  fs::remove(t.work + "/pkg/old.py");
  put(t.work, "build/out.txt", "rebuilt\n");             // excluded
  put(t.work, "pkg/calc.py.orig", kCalc);                // backup: scrubbed
  put(t.work, "notes~", "scratch\n");                    // backup: scrubbed
  put(t.work, "img.bin", std::string("\x89PNG\0\0data", 10));  // binary: skipped
  DiffOptions o;
  o.exclude = {"build"};
  auto files = diff_files(t.pristine, t.work, o);
  ASSERT_EQ(files.size(), 3u);
  EXPECT_EQ(files[0].path, "a_new.py");
  EXPECT_TRUE(files[0].added);
  EXPECT_EQ(files[1].path, "pkg/calc.py");
  EXPECT_EQ(files[2].path, "pkg/old.py");
  EXPECT_TRUE(files[2].deleted);
  EXPECT_NE(files[1].text.find("--- a/pkg/calc.py\n+++ b/pkg/calc.py\n@@"), std::string::npos);
  EXPECT_NE(files[0].text.find("--- /dev/null\n+++ b/a_new.py\n"), std::string::npos);
  EXPECT_NE(files[2].text.find("--- a/pkg/old.py\n+++ /dev/null\n"), std::string::npos);
  EXPECT_FALSE(fs::exists(t.work + "/pkg/calc.py.orig"));
  EXPECT_FALSE(fs::exists(t.work + "/notes~"));
  EXPECT_TRUE(fs::exists(t.work + "/img.bin"));
}

TEST(DuelDiff, BackupPresentInPristineIsKept) {
  Trees t = make_trees();
  put(t.pristine, "data.tmp", "fixture\n");
  put(t.work, "data.tmp", "fixture\n");
  EXPECT_TRUE(scrub_backup_files(t.pristine, t.work).empty());
  EXPECT_TRUE(fs::exists(t.work + "/data.tmp"));
  EXPECT_EQ(diff_workspace(t.pristine, t.work), "");
}

TEST(DuelDiff, RoundTripApplyReproducesWorkspace) {
  Trees t = make_trees();
  std::string calc = kCalc;
  calc.replace(calc.find("a + b"), 5, "int(a) + int(b)");
  calc.replace(calc.find("a / b"), 5, "a / b if b else 0.0");
  calc += "\n\ndef mod(a, b):\n    return a % b\n";
  put(t.work, "pkg/calc.py", calc);
  put(t.work, "pkg/new/mod.py", "y = 2");  // no final newline
  fs::remove(t.work + "/README");
  std::string patch = diff_workspace(t.pristine, t.work);
  ASSERT_TRUE(validate_patch(patch));
  DiffStats s = patch_stats(patch);
  EXPECT_EQ(s.files, 3);
  EXPECT_EQ(s.hunks, 4);  // calc.py: 2 hunks (top edit, div + mod at the end), new file, deletion
  EXPECT_EQ(s.removed_lines, 3);  // a + b, a / b, README's line
  EXPECT_EQ(s.added_lines, 2 + 4 + 1);
  EXPECT_EQ(patch_paths(patch), (std::vector<std::string>{"README", "pkg/calc.py", "pkg/new/mod.py"}));

  std::string target = fresh_dir("target");
  copy_tree(t.pristine, target);
  apply_patch(target, patch);
  EXPECT_EQ(spade::read_file(target + "/pkg/calc.py"), calc);
  EXPECT_EQ(spade::read_file(target + "/pkg/new/mod.py"), "y = 2");
  EXPECT_FALSE(fs::exists(target + "/README"));
  EXPECT_EQ(diff_workspace(t.work, target), "");
  EXPECT_EQ(tree_hash(t.work), tree_hash(target));
}

TEST(DuelDiff, HunksApplyWithOffsetAndOnlyOncePerFile) {
  Trees t = make_trees();
  std::string calc = kCalc;
  calc.replace(calc.find("a * b"), 5, "a * b * 1");
  put(t.work, "pkg/calc.py", calc);
  put(t.work, "README", "calc v2\n");
  std::string patch = diff_workspace(t.pristine, t.work);
  // Target has 3 extra lines on top of calc.py: the hunk applies at offset +3; README has no shift.
  std::string target = fresh_dir("target");
  copy_tree(t.pristine, target);
  put(target, "pkg/calc.py", std::string("# a\n# b\n# c\n") + kCalc);
  apply_patch(target, patch);
  EXPECT_EQ(spade::read_file(target + "/pkg/calc.py"), "# a\n# b\n# c\n" + calc);
  EXPECT_EQ(spade::read_file(target + "/README"), "calc v2\n");
  // Beyond the fuzz window (+10) it is refused, and nothing is written (all-or-nothing).
  std::string far = fresh_dir("far");
  copy_tree(t.pristine, far);
  put(far, "pkg/calc.py", std::string(20, '\n') + kCalc);
  EXPECT_THROW(apply_patch(far, patch), spade::Error);
  EXPECT_EQ(spade::read_file(far + "/README"), "calc\n");
}

TEST(DuelDiff, ValidationNamesTheProblem) {
  std::string why;
  EXPECT_FALSE(validate_patch("", &why));
  EXPECT_EQ(why, "empty diff");
  EXPECT_FALSE(validate_patch("just text\n", &why));
  EXPECT_FALSE(validate_patch("--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n-a\n+b\n", &why));
  EXPECT_NE(why.find("patch line 3"), std::string::npos) << why;
  EXPECT_FALSE(validate_patch("@@ -1 +1 @@\n-a\n+b\n", &why));
  EXPECT_NE(why.find("before any"), std::string::npos) << why;
  EXPECT_FALSE(validate_patch("--- a/../etc/passwd\n+++ b/../etc/passwd\n@@ -1 +1 @@\n-a\n+b\n", &why));
  EXPECT_NE(why.find("unsafe path"), std::string::npos) << why;
  EXPECT_TRUE(validate_patch("--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n", &why)) << why;
}

TEST(DuelDiff, GnuPatchAcceptsOurDiff) {
  // Cross-check with Debian's patch(1): our per-file diff is a valid -p1 patch.
  Trees t = make_trees();
  put(t.work, "pkg/calc.py", std::string(kCalc) + "\n\ndef neg(a):\n    return -a\n");
  put(t.work, "added.txt", "hello\n");
  std::string patch = diff_workspace(t.pristine, t.work);
  std::string target = fresh_dir("gnu");
  copy_tree(t.pristine, target);
  ProcessOptions po;
  po.cwd = target;
  po.stdin_data = patch;
  ProcessResult r = run_process({"patch", "-p1", "--batch", "--silent"}, po);
  ASSERT_EQ(r.rc, 0) << r.output;
  EXPECT_EQ(diff_workspace(t.work, target), "");
}

TEST(DuelDiff, Sha256KnownVectors) {
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(DuelDiff, SplitPatchPerFileEvenWithDashLinesInHunks) {
  Trees t = make_trees();
  put(t.pristine, "notes.md", "-- old item\nkeep\n");
  put(t.work, "notes.md", "++ new item\nkeep\n");  // the hunk body reads "--- old item" / "+++ new item"
  put(t.work, "README", "calc 2\n");
  std::string patch = diff_workspace(t.pristine, t.work);
  auto chunks = split_patch(patch);
  ASSERT_EQ(chunks.size(), 2u);
  EXPECT_EQ(chunks[0].first, "README");
  EXPECT_EQ(chunks[1].first, "notes.md");
  EXPECT_NE(chunks[1].second.find("\n--- old item\n+++ new item\n"), std::string::npos);
  EXPECT_EQ(chunks[0].second + chunks[1].second, patch);
}

TEST(DuelDiff, SymlinksAreCopiedAsLinksAndNeverResolvedIntoPaths) {
  // A build tree's usual shape: lib.so -> lib.so.1 -> lib.so.1.0 and a directory link. Resolving the
  // link while computing the relative path (fs::relative) made "lib.so" collide with its target.
  std::string src = fresh_dir("links_src"), dst = fresh_dir("links_dst") + "/copy";
  put(src, "build/lib.so.1.0", "binary\n");
  fs::create_symlink("lib.so.1.0", src + "/build/lib.so.1");
  fs::create_symlink("lib.so.1", src + "/build/lib.so");
  put(src, "src/a.c", "int a;\n");
  fs::create_directory_symlink("src", src + "/src_link");
  copy_tree(src, dst);
  EXPECT_TRUE(fs::is_symlink(dst + "/build/lib.so"));
  EXPECT_EQ(fs::read_symlink(dst + "/build/lib.so").string(), "lib.so.1");
  EXPECT_EQ(fs::read_symlink(dst + "/src_link").string(), "src");
  EXPECT_EQ(spade::read_file(dst + "/build/lib.so.1.0"), "binary\n");
  // Hashing skips links: the copy hashes like the original.
  EXPECT_EQ(tree_hash(dst, {}), tree_hash(src, {}));
}

// ---- git's extended headers and "\ No newline at end of file" (issue 17). Every patch below is
// hand-built in the form `git diff -M -C` prints (checked by generating the same changes in a scratch
// repository with git 2.39) and applied three ways on copies of one tree: our apply_patch(), real
// `git apply` and GNU `patch -p1 --forward` (2.7.6, Debian 12); the trees are compared file by file
// (content and executable bit).

namespace {

using Tree = std::map<std::string, std::pair<std::string, bool>>;  // path -> (bytes, executable)

Tree snapshot(const std::string& dir) {
  Tree t;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (!e.is_regular_file()) continue;
    bool x = (fs::status(e.path()).permissions() & fs::perms::owner_exec) != fs::perms::none;
    t[e.path().lexically_relative(dir).generic_string()] = {spade::read_file(e.path().string()), x};
  }
  return t;
}

// Runs `git apply` or `patch` on `dir` with `patch` on stdin; returns the exit status. git does not
// look for a repository above `dir` (the build tree sits inside a git checkout).
int real_apply(const std::string& tool, const std::string& dir, const std::string& patch) {
  ProcessOptions po;
  po.cwd = dir;
  po.stdin_data = patch;
  std::vector<std::string> argv =
      tool == "git" ? std::vector<std::string>{"env", "GIT_CEILING_DIRECTORIES=" + fs::path(dir).parent_path().string(),
                                               "git", "apply", "-"}
                    : std::vector<std::string>{"patch", "-p1", "--forward", "--batch", "--silent"};
  return run_process(argv, po).rc;
}

// A tree of `files` (path -> content), `exec` paths made executable.
std::string tree_of(const std::string& name, const std::map<std::string, std::string>& files,
                    const std::vector<std::string>& exec = {}) {
  std::string d = fresh_dir(name);
  for (const auto& [p, c] : files) put(d, p, c);
  for (const auto& p : exec) fs::permissions(d + "/" + p, fs::perms::owner_exec, fs::perm_options::add);
  return d;
}

// Applies `patch` to copies of `files` with ours, git and (when `with_patch`) GNU patch; expects all to
// succeed with the same tree, and returns it.
Tree apply_three_ways(const std::map<std::string, std::string>& files, const std::string& patch, bool with_patch = true,
                      const std::vector<std::string>& exec = {}) {
  std::string ours = tree_of("ours", files, exec), git = tree_of("git", files, exec), gnu = tree_of("gnu", files, exec);
  apply_patch(ours, patch);
  EXPECT_EQ(real_apply("git", git, patch), 0);
  EXPECT_EQ(snapshot(ours), snapshot(git));
  if (with_patch) {
    EXPECT_EQ(real_apply("patch", gnu, patch), 0);
    EXPECT_EQ(snapshot(ours), snapshot(gnu));
  }
  return snapshot(ours);
}

std::string apply_error(const std::map<std::string, std::string>& files, const std::string& patch, bool* git_refused) {
  std::string ours = tree_of("ours", files), git = tree_of("git", files);
  Tree before = snapshot(ours);
  *git_refused = real_apply("git", git, patch) != 0;
  try {
    apply_patch(ours, patch);
  } catch (const spade::Error& e) {
    EXPECT_EQ(snapshot(ours), before) << "a refused patch changed the tree";
    return e.what();
  }
  return "";
}

const std::map<std::string, std::string> kGitTree = {
    {"f.txt", "a\nb\nc\n"}, {"g.txt", "x\ny\n"}, {"s.sh", "#!/bin/sh\necho hi\n"}, {"x", "x\n"}};

}  // namespace

TEST(DuelDiff, GitRenameCopyAndModeChangeApplyAsGitAndPatchDo) {
  const std::string patch =
      "diff --git a/g.txt b/g2.txt\nsimilarity index 100%\ncopy from g.txt\ncopy to g2.txt\n"
      "diff --git a/f.txt b/h.txt\nsimilarity index 66%\nrename from f.txt\nrename to h.txt\n"
      "index de98044..7be73ce 100644\n--- a/f.txt\n+++ b/h.txt\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n"
      "diff --git a/s.sh b/s.sh\nold mode 100644\nnew mode 100755\n";
  Tree t = apply_three_ways(kGitTree, patch);
  EXPECT_EQ(t.count("f.txt"), 0u);
  EXPECT_EQ(t["h.txt"], std::make_pair(std::string("a\nB\nc\n"), false));
  EXPECT_EQ(t["g2.txt"], std::make_pair(std::string("x\ny\n"), false));
  EXPECT_EQ(t["g.txt"].first, "x\ny\n");
  EXPECT_TRUE(t["s.sh"].second);
  // Parsed as what it is, not to nothing (the old parser saw one file, h.txt, and no copy or mode).
  std::vector<FilePatch> files = parse_patch(patch);
  ASSERT_EQ(files.size(), 3u);
  EXPECT_TRUE(files[0].copied);
  EXPECT_EQ(files[0].old_path, "g.txt");
  EXPECT_EQ(files[0].path, "g2.txt");
  EXPECT_TRUE(files[1].renamed);
  EXPECT_EQ(files[1].old_path, "f.txt");
  EXPECT_EQ(files[2].new_mode, "100755");
  EXPECT_EQ(patch_paths(patch), (std::vector<std::string>{"f.txt", "g.txt", "g2.txt", "h.txt", "s.sh"}));
  // Per-file chunks keep their git headers and tile the patch.
  auto chunks = split_patch(patch);
  ASSERT_EQ(chunks.size(), 3u);
  EXPECT_EQ(chunks[0].second + chunks[1].second + chunks[2].second, patch);
  EXPECT_EQ(chunks[2].second, "diff --git a/s.sh b/s.sh\nold mode 100644\nnew mode 100755\n");
  // Back to 100644.
  Tree back = apply_three_ways({{"s.sh", "echo\n"}}, "diff --git a/s.sh b/s.sh\nold mode 100755\nnew mode 100644\n", true,
                               {"s.sh"});
  EXPECT_FALSE(back["s.sh"].second);
}

TEST(DuelDiff, GitPureRenameEmptyNewExecutableNewAndDeletedFiles) {
  const std::string patch =
      "diff --git a/g.txt b/sub/g3.txt\nsimilarity index 100%\nrename from g.txt\nrename to sub/g3.txt\n"
      "diff --git a/empty b/empty\nnew file mode 100644\nindex 0000000..e69de29\n"
      "diff --git a/run.sh b/run.sh\nnew file mode 100755\nindex 0000000..1a2b3c4\n--- /dev/null\n+++ b/run.sh\n"
      "@@ -0,0 +1 @@\n+echo run\n"
      "diff --git a/x b/x\ndeleted file mode 100644\nindex 587be6b..0000000\n--- a/x\n+++ /dev/null\n@@ -1 +0,0 @@\n-x\n";
  std::string why;
  EXPECT_TRUE(validate_patch(patch, &why)) << why;
  Tree t = apply_three_ways(kGitTree, patch);
  EXPECT_EQ(t.count("g.txt"), 0u);
  EXPECT_EQ(t["sub/g3.txt"].first, "x\ny\n");
  EXPECT_EQ(t["empty"], std::make_pair(std::string(), false));
  EXPECT_EQ(t["run.sh"], std::make_pair(std::string("echo run\n"), true));
  EXPECT_EQ(t.count("x"), 0u);
  // A quoted (non-ASCII) path, as git writes it with core.quotePath.
  std::string q = "diff --git \"a/caf\\303\\251.txt\" \"b/caf\\303\\251.txt\"\nold mode 100644\nnew mode 100755\n";
  Tree qt = apply_three_ways({{"caf\xC3\xA9.txt", "a\n"}}, q, false);
  EXPECT_TRUE(qt["caf\xC3\xA9.txt"].second);
}

TEST(DuelDiff, GitHeadersThatCannotApplyAreRefusedByName) {
  struct Case {
    std::string patch, error;
    bool git_refuses;  // git apply on the same tree; where it accepts, the comment says why we refuse
  };
  const std::vector<Case> cases = {
      {"diff --git a/g.txt b/x\nsimilarity index 100%\nrename from g.txt\nrename to x\n",
       "apply_patch: x: rename target already exists", true},  // GNU patch overwrites x; we follow git
      {"diff --git a/nosuch b/n2\nsimilarity index 100%\nrename from nosuch\nrename to n2\n",
       "apply_patch: nosuch: file to be renamed does not exist", true},
      {"diff --git a/f.txt b/f.txt\ndeleted file mode 100644\n--- a/f.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-a\n",
       "apply_patch: f.txt: the deletion leaves content the patch does not remove (2 lines)", true},
      {"diff --git a/f.txt b/f.txt\nindex 1111111..2222222 100644\nBinary files a/f.txt and b/f.txt differ\n",
       "patch line 3: binary patch for 'f.txt' is not supported", true},
      {"diff --git a/f.txt b/f.txt\nindex 1111111..2222222 100644\nGIT binary patch\nliteral 3\nKcmZ?wbO8VW0RR91\n\n",
       "patch line 3: binary patch for 'f.txt' is not supported", true},
      // git would create a symlink / a gitlink: workspaces hold regular files only.
      {"diff --git a/link b/link\nnew file mode 120000\nindex 0000000..1111111\n--- /dev/null\n+++ b/link\n@@ -0,0 +1 @@\n"
       "+g.txt\n\\ No newline at end of file\n",
       "patch line 1: 'link' is a symlink; only regular files (100644, 100755) are supported", false},
      {"diff --git a/mod b/mod\nnew file mode 160000\nindex 0000000..1111111\n--- /dev/null\n+++ b/mod\n@@ -0,0 +1 @@\n"
       "+Subproject commit 1111111111111111111111111111111111111111\n",
       "patch line 1: 'mod' is a submodule (gitlink)", false},
      {"diff --git a/g.txt b/h\nrename from g.txt\n", "patch line 1: 'h': a rename or copy needs both its 'from' and 'to' lines",
       true},
      {"diff --git a/s.sh b/s.sh\nold mode 100644\n", "patch line 1: 's.sh': 'old mode' and 'new mode' come together", true},
      {"diff --git a/f.txt b/f.txt\nindex 1111111..2222222 100644\n", "patch line 1: 'f.txt' has a git header but no change",
       true},
  };
  for (const Case& c : cases) {
    bool git_refused = false;
    std::string e = apply_error(kGitTree, c.patch, &git_refused);
    EXPECT_NE(e.find(c.error), std::string::npos) << "got: " << e << "\npatch:\n" << c.patch;
    EXPECT_EQ(git_refused, c.git_refuses) << c.patch;
  }
}

TEST(DuelDiff, NoNewlineAtEndOfFileOnBothSidesAsGitAndPatch) {
  // The three hunks `diff -u` writes for a last line without a final newline, each applied to a file
  // with and without one. git apply and patch --forward agree on every cell: a hunk applies only where
  // its old side's final newline matches the file's (the old code applied A to "a\nb\n" and C to
  // "a\nb", silently changing the newline).
  const std::string A = "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+c\n\\ No newline at end of file\n";
  const std::string B = "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+b\n";
  const std::string C = "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n+b\n\\ No newline at end of file\n";
  struct Cell {
    const std::string* patch;
    std::string start, result;  // result "" = refused
  };
  const std::vector<Cell> cells = {{&A, "a\nb", "a\nc"}, {&A, "a\nb\n", ""}, {&B, "a\nb", "a\nb\n"},
                                   {&B, "a\nb\n", ""},   {&C, "a\nb", ""},    {&C, "a\nb\n", "a\nb"}};
  for (const Cell& c : cells) {
    std::string ours = tree_of("nl_ours", {{"f", c.start}}), git = tree_of("nl_git", {{"f", c.start}}),
                gnu = tree_of("nl_gnu", {{"f", c.start}});
    bool ok = true;
    try {
      apply_patch(ours, *c.patch);
    } catch (const spade::Error& e) {
      ok = false;
      EXPECT_NE(std::string(e.what()).find("does not apply"), std::string::npos) << e.what();
    }
    EXPECT_EQ(ok, !c.result.empty()) << *c.patch << "on " << c.start;
    EXPECT_EQ(real_apply("git", git, *c.patch) == 0, !c.result.empty()) << *c.patch << "on " << c.start;
    EXPECT_EQ(real_apply("patch", gnu, *c.patch) == 0, !c.result.empty()) << *c.patch << "on " << c.start;
    std::string want = c.result.empty() ? c.start : c.result;
    EXPECT_EQ(spade::read_file(ours + "/f"), want);
    EXPECT_EQ(spade::read_file(git + "/f"), want);
  }
  // A new file without a final newline, and a marker on a line that is not the file's last is refused.
  Tree t = apply_three_ways({}, "--- /dev/null\n+++ b/n\n@@ -0,0 +1,2 @@\n+1\n+2\n\\ No newline at end of file\n");
  EXPECT_EQ(t["n"].first, "1\n2");
  std::string mid = tree_of("nl_mid", {{"f", "a\nb\nc\n"}});
  EXPECT_THROW(apply_patch(mid, "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n+B\n\\ No newline at end of file\n"), spade::Error);
  EXPECT_EQ(spade::read_file(mid + "/f"), "a\nb\nc\n");
}
