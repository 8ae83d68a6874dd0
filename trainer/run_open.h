// Opening the run directory of `spade train` / `spade sft` (docs/design.md, Run directory): a new run, a
// resumed one (--resume) or a replaced one (--overwrite), never two runs mixed in one directory, and
// config.yaml always the config that produced the files next to it. Follows common/output_path.h.
#pragma once
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "trainer/config.h"
#include "trainer/run_dir.h"

namespace spade::trainer {

enum class RunMode {
  create,     // a new run: the directory must be absent or empty
  resume,     // continue the run in the directory (spade train --resume)
  overwrite,  // replace the run in the directory (--overwrite)
};

/// What open_run_dir() will do, decided before anything is written.
struct RunDirPlan {
  std::string root;             // <run.out_dir>/<run.name>
  RunMode mode = RunMode::create;
  bool create_out_dir = false;  // run.out_dir is the default "runs" and does not exist yet
  bool replace = false;         // overwrite: the directory holds a run that will be replaced
  std::string command;          // "train" or "sft", for messages
  std::vector<std::string> inputs;  // what the run reads (never replaced): config paths + extra_inputs
};

/// Keys whose value decides what the run directory holds (its tokenizer, model shape and corpus): a
/// resumed run must keep them. Prefixes ending in '.' match a whole section.
const std::vector<std::string>& run_identity_keys();

/// The keys (dotted, as `spade config show` prints them) whose values differ between `a` and `b`,
/// each with a's and b's value as YAML text; only keys starting with one of `prefixes` ({} = all).
std::map<std::string, std::pair<std::string, std::string>> config_differences(
    const Config& a, const Config& b, const std::vector<std::string>& prefixes = {});

/// Checks the run directory of `config` for `mode` and returns the plan; touches nothing, so every
/// rank of a data-parallel job can call it before any rank writes. `command` ("train" or "sft") is
/// named in messages; `offer_resume`: whether --resume exists for it. Throws spade::Error naming the
/// directory and what would fix it:
///   - run.out_dir does not exist (the default "runs" is planned to be created instead);
///   - create: the directory exists and is not empty (with the config.yaml keys that differ, if any);
///   - resume: no config.yaml there, or a run_identity_keys() value differs from the saved one;
///   - overwrite: the directory is not a run (no config.yaml, or an entry no run writes), or it
///     is or holds an input of `config` (corpus, tokenizer, init checkpoint, KL reference, seed
///     environments, `extra_inputs` such as the --config file) or the working directory.
RunDirPlan plan_run_dir(const Config& config, RunMode mode, const std::string& command, bool offer_resume,
                        const std::vector<std::string>& extra_inputs = {});

/// Carries out `plan` (one process: rank 0) and returns the run directory with its subfolders:
/// creates runs/ when planned (saying so through `log`), or for a replace writes the new empty run
/// in a temporary sibling and exchanges it with the old one in one rename, then removes the old
/// (common/output_path.h StagedDir). Throws spade::Error on I/O failure.
RunDir open_run_dir(const RunDirPlan& plan, const Config& config, const std::function<void(const std::string&)>& log);

}  // namespace spade::trainer
