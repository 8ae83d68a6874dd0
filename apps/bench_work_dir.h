// The --work-dir of `spade bench sampler | trainer`: a scratch directory in which each benchmarked
// model's random checkpoint is written as WORK/<model>/ (and read back by the Python baselines). Other
// files in it are left alone.
#pragma once
#include <string>
#include <vector>

namespace spade::apps {

/// Checks, before any model is built, that `work_dir` or its parent exists and that each
/// WORK/<name> is absent, empty, or a checkpoint an earlier benchmark wrote there (it holds
/// config.json): nothing else is ever replaced (common/output_path.h). Then creates `work_dir` when
/// it is missing (one level). `what` names the command in messages. Throws spade::Error.
void prepare_bench_work_dir(const std::string& what, const std::string& work_dir, const std::vector<std::string>& names);

}  // namespace spade::apps
