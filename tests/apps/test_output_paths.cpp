// Every `spade` command that writes at a path the user names follows common/output_path.h, checked
// here end to end with the real binary, one test per writer: a non-empty target without --overwrite
// is refused and left as it was (the whole tree compared before and after); with --overwrite, a
// target that is or holds the command's input or a run directory is still refused; a failure in
// the middle of the write (the file size limit of `ulimit -f`, with SIGXFSZ ignored so the write
// fails with EFBIG as on a full disk) leaves the old content whole and no temporary sibling.
// The expected outcomes are the rule's sentences; the run used as input is a real `spade sft` run.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "common/atomic_file.h"
#include "tests/testing/test_util.h"
#include "tests/testing/tree_snapshot.h"
#include "tests/trainer/tiny_run.h"

namespace fs = std::filesystem;
using spade::fixtures::CommandResult;
using spade::fixtures::count_entries_with_prefix;
using spade::fixtures::tree_snapshot;

namespace {

std::string fresh(const std::string& name) { return spade::fixtures::fresh_test_dir("output_paths", name); }

CommandResult spade_cmd(const std::string& args) {
  return spade::fixtures::run_command(std::string(SPADE_BIN) + " " + args + " 2>&1");
}

// `args` under a file size limit of `blocks` 512-byte blocks (0: no byte may be written to a file),
// with SIGXFSZ ignored: a write past the limit fails with EFBIG instead of killing the process.
CommandResult spade_limited(int blocks, const std::string& args) {
  return spade::fixtures::run_command("sh -c \"ulimit -f " + std::to_string(blocks) + "; trap '' XFSZ; exec " +
                                      SPADE_BIN + " " + args + "\" 2>&1");
}

bool has(const CommandResult& r, const std::string& text) { return r.out.find(text) != std::string::npos; }

const std::string kMatches =
    R"([{"match_id": "m1", "model_a": "x", "model_b": "y", "outcome": "a_wins"},
        {"match_id": "m2", "model_a": "y", "model_b": "z", "outcome": "a_wins"},
        {"match_id": "m3", "model_a": "x", "model_b": "z", "outcome": "draw"}])";

const std::string kSpec = std::string(SPADE_SOURCE_DIR) + "/tests/evaldual/fixtures/repos/pyfix.yaml";

// A real run made by `spade sft` on the tiny config (tests/trainer/tiny_run.h): config.yaml, corpus,
// tokenizer, checkpoints/step_000000. Returns the run directory.
std::string make_run(const std::string& dir) {
  spade::write_file_atomic(dir + "/tiny.yaml", spade::fixtures::tiny_run_yaml(dir, /*threads=*/1, /*max_attempts=*/1));
  const CommandResult r = spade_cmd("sft --config " + dir + "/tiny.yaml --name run");
  EXPECT_EQ(r.rc, 0) << r.out;
  return dir + "/run";
}

}  // namespace

TEST(OutputPaths, ExportNeverDeletesARunAndReplacesOnlyWithOverwrite) {
  const std::string d = fresh("export");
  const std::string run = make_run(d);
  const std::string ckpt = run + "/checkpoints/step_000000";
  ASSERT_TRUE(fs::exists(ckpt + "/model.safetensors"));
  const auto run_before = tree_snapshot(run);

  // The reported case: --out is the run itself (it holds the input and is a run): refused, with or
  // without --overwrite, and nothing in it changes (it used to be emptied down to the five HF files).
  for (const char* flag : {"", " --overwrite"}) {
    const CommandResult r = spade_cmd("export " + ckpt + " --out " + run + flag);
    EXPECT_EQ(r.rc, 1) << r.out;
    EXPECT_TRUE(has(r, "export --out " + run + ": contains the input " + ckpt)) << r.out;
    EXPECT_EQ(tree_snapshot(run), run_before);
  }
  // An unrelated non-empty folder: refused without --overwrite, untouched.
  spade::write_file_atomic(d + "/mine/notes.txt", "mine");
  CommandResult r = spade_cmd("export " + ckpt + " --out " + d + "/mine");
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_TRUE(has(r, "export --out " + d + "/mine: exists and is not empty (holds notes.txt); pass --overwrite")) << r.out;
  EXPECT_EQ(spade::read_file(d + "/mine/notes.txt"), "mine");
  // A folder holding (a copy of) a run somewhere below: never replaced, even with --overwrite.
  fs::create_directories(d + "/holder");
  fs::copy(run, d + "/holder/old_run", fs::copy_options::recursive);
  const auto holder_before = tree_snapshot(d + "/holder");
  r = spade_cmd("export " + ckpt + " --out " + d + "/holder --overwrite");
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_TRUE(has(r, "contains the spade run directory " + d + "/holder/old_run")) << r.out;
  EXPECT_EQ(tree_snapshot(d + "/holder"), holder_before);
  // A missing parent is an error, not a mkdir -p.
  r = spade_cmd("export " + ckpt + " --out " + d + "/no/such/out");
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_TRUE(has(r, "the directory " + d + "/no/such does not exist")) << r.out;
  EXPECT_FALSE(fs::exists(d + "/no"));

  // A new directory, then replaced whole with --overwrite: a file of the old one does not survive.
  r = spade_cmd("export " + ckpt + " --out " + d + "/hf");
  ASSERT_EQ(r.rc, 0) << r.out;
  spade::write_file_atomic(d + "/hf/stale.txt", "from before");
  r = spade_cmd("export " + ckpt + " --out " + d + "/hf --overwrite --dtype bf16");
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_FALSE(fs::exists(d + "/hf/stale.txt"));
  EXPECT_NE(spade::read_file(d + "/hf/config.json").find("\"torch_dtype\": \"bfloat16\""), std::string::npos);

  // A failure half-way (config.json fits in 4 blocks, the weights do not): the old export is whole.
  const auto hf_before = tree_snapshot(d + "/hf");
  r = spade_limited(4, "export " + ckpt + " --out " + d + "/hf --overwrite");
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_TRUE(has(r, "write failed")) << r.out;
  EXPECT_EQ(tree_snapshot(d + "/hf"), hf_before);
  EXPECT_EQ(count_entries_with_prefix(d, ".hf."), 0);
  EXPECT_EQ(tree_snapshot(run), run_before);
}

TEST(OutputPaths, CorpusBuild) {
  const std::string d = fresh("corpus");
  spade::write_file_atomic(d + "/src/mod.py",
                           "\"\"\"A module whose documentation has well over five words in it.\"\"\"\n");
  const std::string build = "corpus build --from " + d + "/src --min-words 5 --out " + d + "/corpus.jsonl";
  spade::write_file_atomic(d + "/corpus.jsonl", "old corpus\n");
  CommandResult r = spade_cmd(build);
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_TRUE(has(r, "corpus build --out " + d + "/corpus.jsonl: exists and is not empty; pass --overwrite")) << r.out;
  EXPECT_EQ(spade::read_file(d + "/corpus.jsonl"), "old corpus\n");
  // The output given as one of the sources: refused even with --overwrite.
  r = spade_cmd("corpus build --from " + d + "/src/mod.py --min-words 5 --out " + d + "/src/mod.py --overwrite");
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_TRUE(has(r, ": is the input " + d + "/src/mod.py of this command")) << r.out;
  EXPECT_NE(spade::read_file(d + "/src/mod.py").find("well over five words"), std::string::npos);
  // No byte may be written: the old corpus stays, no temporary is left.
  r = spade_limited(0, build + " --overwrite");
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_EQ(spade::read_file(d + "/corpus.jsonl"), "old corpus\n");
  EXPECT_EQ(count_entries_with_prefix(d, ".corpus.jsonl."), 0);
  r = spade_cmd(build + " --overwrite");
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(spade::read_file(d + "/corpus.jsonl").find("well over five words"), std::string::npos);
}

TEST(OutputPaths, DuelRateAndReport) {
  const std::string d = fresh("rate_report");
  spade::write_file_atomic(d + "/matches.json", kMatches);
  const std::string rate = "duel rate --matches " + d + "/matches.json --bootstrap 20 --out " + d + "/rankings.json";
  ASSERT_EQ(spade_cmd(rate).rc, 0);
  const std::string rankings = spade::read_file(d + "/rankings.json");
  // duel rate: an existing --out is refused before anything is computed, and kept.
  spade::write_file_atomic(d + "/old.json", "{\"old\": true}\n");
  CommandResult r = spade_cmd("duel rate --matches " + d + "/matches.json --out " + d + "/old.json");
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_TRUE(has(r, "duel rate --out " + d + "/old.json: exists and is not empty; pass --overwrite")) << r.out;
  EXPECT_EQ(spade::read_file(d + "/old.json"), "{\"old\": true}\n");
  r = spade_cmd("duel rate --matches " + d + "/matches.json --out " + d + "/matches.json --overwrite");
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_TRUE(has(r, ": is the input " + d + "/matches.json")) << r.out;
  EXPECT_EQ(spade::read_file(d + "/matches.json"), kMatches);
  r = spade_limited(0, "duel rate --matches " + d + "/matches.json --bootstrap 20 --out " + d + "/old.json --overwrite");
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_EQ(spade::read_file(d + "/old.json"), "{\"old\": true}\n");
  EXPECT_EQ(count_entries_with_prefix(d, ".old.json."), 0);
  r = spade_cmd("duel rate --matches " + d + "/matches.json --bootstrap 20 --out " + d + "/old.json --overwrite");
  ASSERT_EQ(r.rc, 0) << r.out;
  // Same input and seed: the same rankings (but for the time of writing).
  auto without_time = [](const std::string& text) {
    nlohmann::json j = nlohmann::json::parse(text);
    j.erase("exported_at");
    return j;
  };
  EXPECT_EQ(without_time(spade::read_file(d + "/old.json")), without_time(rankings));

  // duel report: the same rule.
  spade::write_file_atomic(d + "/board.md", "old board\n");
  r = spade_cmd("duel report --rankings " + d + "/rankings.json --out " + d + "/board.md");
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_TRUE(has(r, "duel report --out " + d + "/board.md: exists and is not empty; pass --overwrite")) << r.out;
  EXPECT_EQ(spade::read_file(d + "/board.md"), "old board\n");
  r = spade_cmd("duel report --rankings " + d + "/rankings.json --out " + d + "/rankings.json --overwrite");
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_TRUE(has(r, ": is the input " + d + "/rankings.json")) << r.out;
  EXPECT_EQ(spade::read_file(d + "/rankings.json"), rankings);
  r = spade_limited(0, "duel report --rankings " + d + "/rankings.json --out " + d + "/board.md --overwrite");
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_EQ(spade::read_file(d + "/board.md"), "old board\n");
  EXPECT_EQ(count_entries_with_prefix(d, ".board.md."), 0);
  r = spade_cmd("duel report --rankings " + d + "/rankings.json --out " + d + "/board.md --overwrite");
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(spade::read_file(d + "/board.md").find("| 1 | x |"), std::string::npos);  // x beat y and drew z
}

// duel match --out, tournament --dir, bank generate --bank and --work: refused before any play (so no
// bank or repository is needed to reach the check), and left as they were.
TEST(OutputPaths, DuelMatchTournamentBankAndWork) {
  const std::string d = fresh("duel");
  const std::string work = d + "/work";
  fs::create_directories(work);
  spade::write_file_atomic(d + "/a.json", "{}");
  spade::write_file_atomic(d + "/match.json", "old match\n");
  const std::string match = "duel match --a a#r --a-script " + d + "/a.json --b b#r --b-script " + d +
                            "/a.json --spec " + kSpec + " --work " + work;
  CommandResult r = spade_cmd(match + " --out " + d + "/match.json");
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_TRUE(has(r, "duel match --out " + d + "/match.json: exists and is not empty; pass --overwrite")) << r.out;
  EXPECT_FALSE(has(r, "task bank")) << r.out;  // refused before the bank is looked at
  EXPECT_EQ(spade::read_file(d + "/match.json"), "old match\n");
  r = spade_cmd(match + " --out " + d + "/a.json --overwrite");
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_TRUE(has(r, ": is the input " + d + "/a.json")) << r.out;
  EXPECT_EQ(spade::read_file(d + "/a.json"), "{}");

  // A tournament directory that holds something else than a tournament's state.
  spade::write_file_atomic(d + "/tdir/notes.txt", "mine");
  r = spade_cmd("duel tournament --participant a#r --participant b#r --spec " + kSpec + " --work " + work + " --dir " +
                d + "/tdir");
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_TRUE(has(r, "duel tournament --dir " + d + "/tdir: exists and is not empty (holds notes.txt); give a new path"))
      << r.out;
  EXPECT_EQ(tree_snapshot(d + "/tdir"), (std::map<std::string, std::string>{{"notes.txt", "mine"}}));

  // A --bank that is not a task bank.
  r = spade_cmd("duel bank generate --participant a#r --script " + d + "/a.json --spec " + kSpec + " --work " + work +
                " --bank " + d + "/match.json");
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_TRUE(has(r, "duel bank generate --bank " + d + "/match.json: exists and is not empty; give a new path")) << r.out;
  EXPECT_EQ(spade::read_file(d + "/match.json"), "old match\n");

  // A --work directory these commands did not make.
  spade::write_file_atomic(d + "/foreign/notes.txt", "mine");
  for (const std::string& cmd : {"duel repos setup --spec " + kSpec, std::string("duel doctor")}) {
    r = spade_cmd(cmd + " --work " + d + "/foreign");
    EXPECT_EQ(r.rc, 1) << r.out;
    EXPECT_TRUE(has(r, "duel --work " + d + "/foreign: exists and is not empty (holds notes.txt); give a new path"))
        << cmd << "\n" << r.out;
    EXPECT_EQ(tree_snapshot(d + "/foreign"), (std::map<std::string, std::string>{{"notes.txt", "mine"}}));
  }
  // The work directory the refused commands above used: marked as theirs, nothing else written.
  EXPECT_TRUE(fs::exists(work + "/.spade-duel-work"));
}

// bench sampler / trainer --work-dir: a WORK/<model> entry that is not an earlier benchmark checkpoint
// is never replaced (checked before any model is built).
TEST(OutputPaths, BenchWorkDirEntries) {
  const std::string d = fresh("bench");
  spade::write_file_atomic(d + "/work/tiny/notes.txt", "mine");
  const auto before = tree_snapshot(d + "/work");
  for (const std::string bench : {"sampler", "trainer"}) {
    const CommandResult r = spade_cmd("bench " + bench + " --models tiny --no-reference --work-dir " + d + "/work");
    EXPECT_EQ(r.rc, 1) << r.out;
    EXPECT_TRUE(has(r, "bench " + bench + " --work-dir entry " + d + "/work/tiny: exists and is not empty (holds "
                       "notes.txt); give a new path"))
        << r.out;
    EXPECT_EQ(tree_snapshot(d + "/work"), before);
  }
  const CommandResult r = spade_cmd("bench trainer --models tiny --no-reference --work-dir " + d + "/no/work");
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_TRUE(has(r, "the directory " + d + "/no does not exist")) << r.out;
}
