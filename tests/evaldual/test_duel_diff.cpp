// Diffs: generation on real trees with GNU diff, parsing, validation, stats, per-file application.
#include <gtest/gtest.h>

#include <filesystem>

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
