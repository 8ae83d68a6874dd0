// `spade train` / `spade sft` and their run directory (trainer/run_open.h), end to end with the real
// binary on the tiny config of tests/trainer/tiny_run.h (a 1-layer model, 2 cold-start steps, 2
// self-play steps: seconds per run): a second run with the same name fails before doing anything and
// changes nothing; --resume continues; a resume or a new run that changes the tokenizer is refused
// with the key named; --overwrite replaces only a run; and the run keeps one step numbering (console,
// metrics.jsonl, TensorBoard, checkpoint names) and its own record (warm_start.jsonl, summary.json).
// Expected values come from the tiny config (its step caps) and from files read back independently:
// metrics and summary as JSON, TensorBoard with tests/trainer/read_tfevents.py, the SentencePiece
// vocabulary as the lines of tokenizer.vocab (one per piece).
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "common/atomic_file.h"
#include "tests/testing/test_util.h"
#include "tests/testing/tree_snapshot.h"
#include "tests/trainer/spawn_helpers.h"
#include "tests/trainer/tiny_run.h"

namespace fs = std::filesystem;
using nlohmann::json;
using spade::fixtures::CommandResult;
using spade::fixtures::tree_snapshot;

namespace {

std::string fresh(const std::string& name) { return spade::fixtures::fresh_test_dir("train_runs", name); }

CommandResult spade_cmd(const std::string& args) {
  return spade::fixtures::run_command(std::string(SPADE_BIN) + " " + args + " 2>&1");
}

bool has(const CommandResult& r, const std::string& text) { return r.out.find(text) != std::string::npos; }

std::vector<json> json_lines(const std::string& path) {
  std::vector<json> out;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) out.push_back(json::parse(line));
  return out;
}

std::vector<int64_t> steps_of(const std::vector<json>& lines) {
  std::vector<int64_t> out;
  for (const json& j : lines) out.push_back(j["step"].get<int64_t>());
  return out;
}

std::vector<std::string> names_in(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

// The steps at which `tag` was logged, over every events file of `tb_dir` (a resumed run adds a file).
std::set<int64_t> tb_steps(const std::string& tb_dir, const std::string& tag, const std::string& scratch) {
  std::set<int64_t> out;
  for (const auto& e : fs::directory_iterator(tb_dir)) {
    const json tb = spade::testutil::read_tfevents(e.path().string(), scratch);
    if (!tb["scalars"].contains(tag)) continue;
    for (const json& point : tb["scalars"][tag]) out.insert(point[0].get<int64_t>());
  }
  return out;
}

int count_lines(const std::string& path) {
  std::ifstream in(path);
  int n = 0;
  for (std::string line; std::getline(in, line);) ++n;
  return n;
}

}  // namespace

TEST(TrainRuns, SameNameTwiceFailsFastResumeContinuesAndOneStepNumbering) {
  const std::string d = fresh("twice");
  const std::string cfg = d + "/tiny.yaml";
  spade::write_file_atomic(cfg, spade::fixtures::tiny_run_yaml(d, /*threads=*/1, /*max_attempts=*/1));
  const std::string run = d + "/t";  // run.name t of the tiny config

  auto t0 = std::chrono::steady_clock::now();
  CommandResult r = spade_cmd("train --config " + cfg);
  const double first_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_EQ(r.rc, 0) << r.out;
  const auto before = tree_snapshot(run);

  // The same command again: refused at once, the directory named with the three ways on, nothing changed.
  t0 = std::chrono::steady_clock::now();
  r = spade_cmd("train --config " + cfg);
  const double second_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_TRUE(has(r, "train: the run directory " + run + " already exists and is not empty (a run of this same "
                     "config); pass --name NEW for a new run, --resume " + run + " to continue it, or --overwrite "
                     "to replace it"))
      << r.out;
  EXPECT_FALSE(has(r, "corpus:")) << r.out;  // nothing was started
  EXPECT_LT(second_s, first_s / 2) << "the refusal should come before any work";
  EXPECT_EQ(tree_snapshot(run), before);
  // A resume that changes the tokenizer: refused with the key and both values, nothing changed.
  r = spade_cmd("train --resume " + run + " --set tokenizer.vocab_size=600");
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_TRUE(has(r, "tokenizer.vocab_size is 500 in " + run + "/config.yaml but 600 here")) << r.out;
  EXPECT_EQ(tree_snapshot(run), before);
  r = spade_cmd("train --resume " + run + " --overwrite");
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_TRUE(has(r, "pass one of them")) << r.out;

  // --resume continues: one more step (3 of 3).
  r = spade_cmd("train --resume " + run + " --set selfplay.steps=3");
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_TRUE(has(r, "resume: continuing at step 3 from " + run + "/checkpoints/step_000002")) << r.out;

  // One step numbering: metrics lines 1..3, the console's "step n/3", TensorBoard steps, and the
  // checkpoint of the last step named after it (keep_last 1 leaves only it).
  const std::vector<json> metrics = json_lines(run + "/metrics.jsonl");
  EXPECT_EQ(steps_of(metrics), (std::vector<int64_t>{1, 2, 3}));
  EXPECT_TRUE(has(r, "step   3/3 |")) << r.out;
  EXPECT_EQ(names_in(run + "/checkpoints"), std::vector<std::string>{"step_000003"});
  EXPECT_EQ(tb_steps(run + "/tb", "actor/pg_loss", d + "/tb.json"), (std::set<int64_t>{1, 2, 3}));
  // The saved config is the one that made the files: selfplay.steps 3 now.
  EXPECT_NE(spade::read_file(run + "/config.yaml").find("steps: 3"), std::string::npos);

  // The cold start's record: 2 steps (warm_start.max_steps of the tiny config), stopped by the step cap,
  // in warm_start.jsonl, TensorBoard and summary.json (kept over the resume).
  const std::vector<json> warm = json_lines(run + "/warm_start.jsonl");
  EXPECT_EQ(steps_of(warm), (std::vector<int64_t>{1, 2}));
  for (const json& w : warm) EXPECT_GT(w["loss"].get<double>(), 0.0) << w;
  EXPECT_EQ(tb_steps(run + "/tb", "warm_start/loss", d + "/tb.json"), (std::set<int64_t>{1, 2}));
  const json summary = json::parse(spade::read_file(run + "/summary.json"));
  EXPECT_TRUE(summary["finished"].get<bool>()) << summary;
  EXPECT_EQ(summary["warm_start"]["steps"], 2) << summary;
  EXPECT_EQ(summary["warm_start"]["stopped_by"], "max_steps") << summary;
  EXPECT_EQ(summary["warm_start"]["last_loss"].get<double>(), warm.back()["loss"].get<double>()) << summary;
  EXPECT_EQ(summary["selfplay"]["steps"], 3) << summary;
  EXPECT_EQ(summary["final_checkpoint"], run + "/checkpoints/step_000003") << summary;
  for (const auto& e : fs::directory_iterator(d))
    EXPECT_NE(e.path().filename().string()[0], '.') << "a temporary was left: " << e.path();
}

TEST(TrainRuns, SftIntoARunWithAnotherTokenizerIsRefusedAndOverwriteReplacesOnlyARun) {
  const std::string d = fresh("sft");
  const std::string cfg = d + "/tiny.yaml";
  spade::write_file_atomic(cfg, spade::fixtures::tiny_run_yaml(d, /*threads=*/1, /*max_attempts=*/1));
  const std::string run = d + "/s";
  CommandResult r = spade_cmd("sft --config " + cfg + " --name s");
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_EQ(count_lines(run + "/tokenizer.vocab"), 500);  // the tiny config's tokenizer.vocab_size
  const auto before = tree_snapshot(run);

  // Another tokenizer size into the same run: refused, naming the directory and the key.
  r = spade_cmd("sft --config " + cfg + " --name s --set tokenizer.vocab_size=600");
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_TRUE(has(r, "sft: the run directory " + run + " already exists and is not empty (a run whose config.yaml "
                     "differs from this one in tokenizer.vocab_size (500 there, 600 here)); pass --name NEW for a "
                     "new run or --overwrite to replace it"))
      << r.out;
  EXPECT_EQ(tree_snapshot(run), before);

  // --overwrite never replaces a directory holding something no run writes, nor one holding an input.
  spade::write_file_atomic(run + "/notes.txt", "mine");
  r = spade_cmd("sft --config " + cfg + " --name s --overwrite");
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_TRUE(has(r, run + " holds notes.txt, which no spade run writes")) << r.out;
  fs::remove(run + "/notes.txt");
  EXPECT_EQ(tree_snapshot(run), before);
  r = spade_cmd("sft --config " + run + "/config.yaml --overwrite");
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_TRUE(has(r, "contains the input " + run + "/config.yaml")) << r.out;
  EXPECT_EQ(tree_snapshot(run), before);
  // A run.out_dir that does not exist is an error, and nothing is made.
  r = spade_cmd("sft --config " + cfg + " --set run.out_dir=" + d + "/nowhere");
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_TRUE(has(r, "run.out_dir " + d + "/nowhere does not exist")) << r.out;
  EXPECT_FALSE(fs::exists(d + "/nowhere"));

  // --overwrite replaces the run whole: the new tokenizer, the new config, no file of the old run.
  spade::write_file_atomic(run + "/metrics.jsonl", "{\"step\": 1}\n");  // as if the old run had trained
  r = spade_cmd("sft --config " + cfg + " --name s --overwrite --set tokenizer.vocab_size=600");
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_TRUE(has(r, "--overwrite: replaced the run in " + run)) << r.out;
  EXPECT_EQ(count_lines(run + "/tokenizer.vocab"), 600);
  EXPECT_NE(spade::read_file(run + "/config.yaml").find("vocab_size: 600"), std::string::npos);
  EXPECT_FALSE(fs::exists(run + "/metrics.jsonl"));
  EXPECT_TRUE(fs::exists(run + "/checkpoints/step_000000/model.safetensors"));
  EXPECT_EQ(names_in(d), (std::vector<std::string>{"s", "tiny.yaml"}));  // no temporary or moved-aside copy
}

// distributed.world_size pins the number of ranks: a launch with another number (here none: world size
// 1) is refused with both numbers and the ways on, before the run directory exists. The message is
// trainer/train.cpp's; 1 is the world size of a process started without WORLD_SIZE (distributed.h).
TEST(TrainRuns, AWorldSizeTheLaunchDoesNotMatchIsRefusedBeforeAnythingIsWritten) {
  const std::string d = fresh("world_size");
  const std::string cfg = d + "/tiny.yaml";
  spade::write_file_atomic(cfg, spade::fixtures::tiny_run_yaml(d, /*threads=*/1, /*max_attempts=*/1));
  CommandResult r = spade::fixtures::run_command("env -u WORLD_SIZE -u RANK -u SLURM_PROCID " + std::string(SPADE_BIN) +
                                                 " train --config " + cfg + " --set distributed.world_size=2 2>&1");
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_TRUE(has(r, "train: distributed.world_size = 2 but this run was launched with 1 rank(s) (WORLD_SIZE); "
                     "launch that many"))
      << r.out;
  EXPECT_FALSE(fs::exists(d + "/t")) << "the refusal must come before the run directory is made";
  // The same config at world size 1 (its default 0: whatever the launcher starts) trains.
  r = spade::fixtures::run_command("env -u WORLD_SIZE -u RANK -u SLURM_PROCID " + std::string(SPADE_BIN) +
                                   " train --config " + cfg + " --set distributed.world_size=1 2>&1");
  EXPECT_EQ(r.rc, 0) << r.out;
}
