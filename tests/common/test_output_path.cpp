// The output rule (common/output_path.h) on its own: every case of its contract, on real files in
// SPADE_TEST_TMP. The expected outcomes are the contract's sentences; the commands that use the rule
// are tested end to end in tests/apps/test_output_paths.cpp.
#include <gtest/gtest.h>

#include <filesystem>
#include <stdexcept>

#include <unistd.h>

#include "common/atomic_file.h"
#include "common/error.h"
#include "common/output_path.h"
#include "tests/testing/test_util.h"
#include "tests/testing/tree_snapshot.h"

using namespace spade;
namespace fs = std::filesystem;

namespace {

std::string fresh(const std::string& name) { return fixtures::fresh_test_dir("output_path", name); }

// A finished run's shape (trainer/run_dir.h): config.yaml, metrics.jsonl, checkpoints/.
void make_run(const std::string& dir) {
  write_file_atomic(dir + "/config.yaml", "run: {name: r}\n");
  write_file_atomic(dir + "/metrics.jsonl", "{\"step\": 1}\n");
  fs::create_directories(dir + "/checkpoints/step_000001");
}

OutputRule rule(bool overwrite = false) {
  OutputRule r;
  r.what = "test --out";
  r.overwrite = overwrite;
  return r;
}

}  // namespace

TEST(OutputPath, AbsentOrEmptyTargetsAreWrittenAndAMissingParentIsAnError) {
  const std::string d = fresh("absent");
  write_output_file(d + "/a.txt", "one", rule());
  EXPECT_EQ(read_file(d + "/a.txt"), "one");
  write_file_atomic(d + "/empty.txt", "");
  write_output_file(d + "/empty.txt", "two", rule());  // an empty file is not "non-empty"
  EXPECT_EQ(read_file(d + "/empty.txt"), "two");
  fs::create_directories(d + "/emptydir");
  {
    StagedDir s(d + "/emptydir", rule());
    write_file_atomic(s.path() + "/x", "x");
    s.commit();
  }
  EXPECT_EQ(read_file(d + "/emptydir/x"), "x");
  // A missing parent: an error naming it; nothing is created.
  const std::string e = fixtures::error_of([&] { write_output_file(d + "/no/such/f.txt", "x", rule()); });
  EXPECT_NE(e.find("test --out " + d + "/no/such/f.txt: the directory " + d + "/no/such does not exist"), std::string::npos) << e;
  EXPECT_FALSE(fs::exists(d + "/no"));
  // Unless the caller allows it (a default root).
  OutputRule create = rule();
  create.may_create_parent = true;
  {
    StagedDir s(d + "/made/out", create);
    s.commit();
  }
  EXPECT_TRUE(fs::is_directory(d + "/made/out"));
  // Exactly the written entries remain: no temporary sibling.
  EXPECT_EQ(fixtures::count_entries_with_prefix(d, ".a.txt.tmp."), 0);
  EXPECT_EQ(fixtures::count_entries_with_prefix(d, ".emptydir.tmp."), 0);
}

TEST(OutputPath, NonEmptyTargetsNeedOverwriteAndAreLeftUntouchedOtherwise) {
  const std::string d = fresh("nonempty");
  write_file_atomic(d + "/f.txt", "old");
  const std::string e = fixtures::error_of([&] { write_output_file(d + "/f.txt", "new", rule()); });
  EXPECT_NE(e.find("test --out " + d + "/f.txt: exists and is not empty; pass --overwrite to replace it"), std::string::npos) << e;
  EXPECT_EQ(read_file(d + "/f.txt"), "old");
  write_output_file(d + "/f.txt", "new", rule(/*overwrite=*/true));
  EXPECT_EQ(read_file(d + "/f.txt"), "new");

  write_file_atomic(d + "/out/a", "a");
  write_file_atomic(d + "/out/sub/b", "b");
  const auto before = fixtures::tree_snapshot(d + "/out");
  const std::string e2 = fixtures::error_of([&] { StagedDir s(d + "/out", rule()); });
  EXPECT_NE(e2.find("test --out " + d + "/out: exists and is not empty (holds a, sub); pass --overwrite"), std::string::npos) << e2;
  EXPECT_EQ(fixtures::tree_snapshot(d + "/out"), before);
  EXPECT_EQ(fixtures::count_entries_with_prefix(d, ".out.tmp."), 0);
  {
    StagedDir s(d + "/out", rule(/*overwrite=*/true));
    write_file_atomic(s.path() + "/c", "c");
    s.commit();
  }
  // Replaced whole: the old entries are gone, not mixed with the new.
  EXPECT_EQ(fixtures::tree_snapshot(d + "/out"), (std::map<std::string, std::string>{{"c", "c"}}));
  EXPECT_EQ(fixtures::count_entries_with_prefix(d, ".out.old."), 0);
  EXPECT_EQ(fixtures::count_entries_with_prefix(d, ".out.tmp."), 0);
  // A command without --overwrite says so.
  OutputRule none = rule();
  none.overwrite_flag = "";
  const std::string e3 = fixtures::error_of([&] { write_output_file(d + "/f.txt", "x", none); });
  EXPECT_NE(e3.find("exists and is not empty; give a new path"), std::string::npos) << e3;
}

TEST(OutputPath, OverwriteNeverReplacesAnInputARunOrTheWorkingDirectory) {
  const std::string d = fresh("never");
  // The target holds the command's input.
  write_file_atomic(d + "/ckpt_parent/ckpt/config.json", "{}");
  const auto before = fixtures::tree_snapshot(d + "/ckpt_parent");
  OutputRule r = rule(/*overwrite=*/true);
  r.inputs = {d + "/ckpt_parent/ckpt"};
  std::string e = fixtures::error_of([&] { StagedDir s(d + "/ckpt_parent", r); });
  EXPECT_NE(e.find(": contains the input " + d + "/ckpt_parent/ckpt of this command and is never replaced"), std::string::npos) << e;
  EXPECT_EQ(fixtures::tree_snapshot(d + "/ckpt_parent"), before);
  // A file target that is the input.
  write_file_atomic(d + "/m.json", "[]");
  r.inputs = {d + "/m.json"};
  e = fixtures::error_of([&] { write_output_file(d + "/./m.json", "x", r); });
  EXPECT_NE(e.find(": is the input " + d + "/m.json of this command"), std::string::npos) << e;
  EXPECT_EQ(read_file(d + "/m.json"), "[]");
  // A run directory, and a directory that holds one somewhere below.
  make_run(d + "/run");
  make_run(d + "/runs/deep/r1");
  const auto runs_before = fixtures::tree_snapshot(d + "/runs");
  e = fixtures::error_of([&] { StagedDir s(d + "/run", rule(true)); });
  EXPECT_NE(e.find(d + "/run: is a spade run directory and is never replaced"), std::string::npos) << e;
  e = fixtures::error_of([&] { StagedDir s(d + "/runs", rule(true)); });
  EXPECT_NE(e.find(d + "/runs: contains the spade run directory " + d + "/runs/deep/r1"), std::string::npos) << e;
  EXPECT_EQ(fixtures::tree_snapshot(d + "/runs"), runs_before);
  EXPECT_TRUE(is_run_directory(d + "/run"));
  EXPECT_FALSE(is_run_directory(d + "/ckpt_parent"));
  // The working directory.
  write_file_atomic(d + "/cwd/inner/x", "x");
  const fs::path old_cwd = fs::current_path();
  fs::current_path(d + "/cwd/inner");
  e = fixtures::error_of([&] { StagedDir s(d + "/cwd", rule(true)); });
  fs::current_path(old_cwd);
  EXPECT_NE(e.find(d + "/cwd: contains the current directory"), std::string::npos) << e;
  EXPECT_TRUE(fs::exists(d + "/cwd/inner/x"));
  // Kinds: a directory given for a file and a file given for a directory.
  e = fixtures::error_of([&] { write_output_file(d + "/cwd", "x", rule(true)); });
  EXPECT_NE(e.find(d + "/cwd: is a directory"), std::string::npos) << e;
  e = fixtures::error_of([&] { StagedDir s(d + "/m.json", rule(true)); });
  EXPECT_NE(e.find(d + "/m.json: exists and is not a directory"), std::string::npos) << e;
}

TEST(OutputPath, OwnEarlierOutputIsReusedWithoutOverwrite) {
  const std::string d = fresh("own");
  write_file_atomic(d + "/t/state.json", "{}");
  OutputRule r = rule();
  r.own = [](const std::string& p) { return fs::exists(p + "/state.json"); };
  EXPECT_TRUE(check_output(d + "/t", OutputKind::directory, r));  // exists, will be written over
  write_file_atomic(d + "/u/other", "x");
  EXPECT_NE(fixtures::error_of([&] { check_output(d + "/u", OutputKind::directory, r); }).find("exists and is not empty"),
            std::string::npos);
  EXPECT_FALSE(check_output(d + "/absent", OutputKind::directory, r));
}

TEST(OutputPath, AFailureMidWriteLeavesTheOldContentAndNoTemporary) {
  const std::string d = fresh("crash");
  write_file_atomic(d + "/out/model.bin", "old weights");
  const auto before = fixtures::tree_snapshot(d + "/out");
  try {
    StagedDir s(d + "/out", rule(/*overwrite=*/true));
    write_file_atomic(s.path() + "/config.json", "{}");
    throw std::runtime_error("the writer failed half-way");  // as a failed weight write would
  } catch (const std::runtime_error&) {
  }
  EXPECT_EQ(fixtures::tree_snapshot(d + "/out"), before);
  EXPECT_EQ(fixtures::count_entries_with_prefix(d, ".out.tmp."), 0);
  // A writer killed mid-write leaves its sibling; the next writer of the target removes it. (pid
  // 999999999 is above Linux's largest pid, 2^22, so no process has it.)
  fs::create_directories(d + "/.out.tmp.999999999.abc/half");
  write_file_atomic(d + "/.f.txt.tmp.999999999.def", "half");
  check_output(d + "/out", OutputKind::directory, rule(true));
  write_output_file(d + "/f.txt", "whole", rule());
  EXPECT_FALSE(fs::exists(d + "/.out.tmp.999999999.abc"));
  EXPECT_FALSE(fs::exists(d + "/.f.txt.tmp.999999999.def"));
  // A live writer's sibling (this process) is left alone.
  const std::string mine = d + "/.f.txt.tmp." + std::to_string(::getpid()) + ".1";
  write_file_atomic(mine, "busy");
  write_output_file(d + "/g.txt", "x", rule());
  check_output(d + "/f.txt", OutputKind::file, rule(true));
  EXPECT_TRUE(fs::exists(mine));
}

TEST(OutputPath, OnlyTrainReplacesARunAndATrailingSlashNamesTheDirectory) {
  const std::string d = fresh("replace_run");
  make_run(d + "/run");
  OutputRule r = rule(/*overwrite=*/true);
  r.may_replace_run = true;  // what `spade train --overwrite` sets once it has recognised the run
  {
    StagedDir s(d + "/run/", r);  // "run/" is the directory run
    write_file_atomic(s.path() + "/config.yaml", "run: {name: new}\n");
    s.commit();
  }
  EXPECT_EQ(fixtures::tree_snapshot(d + "/run"), (std::map<std::string, std::string>{{"config.yaml", "run: {name: new}\n"}}));
  EXPECT_EQ(fixtures::count_entries_with_prefix(d, ".run."), 0);
  // A run below the target is still never replaced.
  make_run(d + "/outer/inner_run");
  write_file_atomic(d + "/outer/config.yaml", "run: {name: outer}\n");
  fs::create_directories(d + "/outer/checkpoints");
  const auto before = fixtures::tree_snapshot(d + "/outer");
  const std::string e = fixtures::error_of([&] { StagedDir s(d + "/outer", r); });
  EXPECT_NE(e.find("contains the spade run directory " + d + "/outer/inner_run"), std::string::npos) << e;
  EXPECT_EQ(fixtures::tree_snapshot(d + "/outer"), before);
}
