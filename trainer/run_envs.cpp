#include "trainer/run_envs.h"

#include <nlohmann/json.hpp>

#include "common/atomic_file.h"

namespace spade::trainer {

std::string env_program_path(const RunDir& run, const std::string& name) { return run.envs_dir() + "/" + name + ".py"; }

void write_design_attempt(const RunDir& run, const std::string& name, const rollout::DesignAttempt& a, int64_t step) {
  nlohmann::json meta = a.report.to_json();
  meta["skill"] = a.skill;
  meta["doc_id"] = a.doc_id;
  meta["step"] = step;
  meta["attempt"] = a.attempt;
  if (a.admitted()) {
    write_file_atomic(env_program_path(run, name), a.code);
    write_file_atomic(run.envs_dir() + "/" + name + ".json", meta.dump(2));
    return;
  }
  const std::string base = run.rejected_dir() + "/" + name + "_try" + std::to_string(a.attempt);
  write_file_atomic(base + ".py", a.code);
  write_file_atomic(base + ".reason.txt", a.report.reason + "\n" + a.report.detail + "\n");
  write_file_atomic(base + ".json", meta.dump(2));
}

void write_env_hint(const RunDir& run, const std::string& id, const std::string& hint) {
  write_file_atomic(run.envs_dir() + "/" + id + ".hint.txt", hint + "\n");
}

}  // namespace spade::trainer
