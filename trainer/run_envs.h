// The envs/ and rejected/ files of a run directory (run_dir.h; reference §8): every designed program
// is saved, an admitted one to envs/<name>.py with its validation report envs/<name>.json and later its
// hint envs/<id>.hint.txt, a rejected one to rejected/<name>_try<attempt>.{py,reason.txt,json}.
// Files are written atomically (common/atomic_file.h); the caller decides which rank writes
// (rank 0 only, selfplay_dp.h). Stateless functions: thread-safe for distinct names.
#pragma once
#include <cstdint>
#include <string>

#include "rollout/designer.h"
#include "trainer/run_dir.h"

namespace spade::trainer {

/// envs/<name>.py: where an admitted program of that name lives (LiveEnv::path).
std::string env_program_path(const RunDir& run, const std::string& name);

/// Saves designer attempt `a` of step `step` under `name` ("game_<step>_<slot>_<skill>"): admitted
/// (a.admitted()) to envs/, otherwise to rejected/ with its reason and detail. The .json holds the
/// validation report (a.report.to_json()) plus skill, doc_id, step and attempt. Throws spade::Error on
/// an I/O failure.
void write_design_attempt(const RunDir& run, const std::string& name, const rollout::DesignAttempt& a, int64_t step);

/// envs/<id>.hint.txt: the environment's hint and a newline ("" + newline for a failed hint).
void write_env_hint(const RunDir& run, const std::string& id, const std::string& hint);

}  // namespace spade::trainer
