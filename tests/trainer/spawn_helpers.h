// Test helpers: start processes with posix_spawn (never fork a process that runs LibTorch threads),
// read a run's metrics.jsonl, and read TensorBoard files back with the independent Python reader.
// Header-only, tests only.
#pragma once
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/atomic_file.h"

extern char** environ;

namespace spade::testutil {

/// Starts `args` (args[0] looked up in PATH) with stdout and stderr appended to `log_path`.
/// Returns the pid, or -1 when the spawn failed.
inline pid_t spawn_logged(std::vector<std::string> args, const std::string& log_path) {
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  pid_t pid = -1;
  const int rc = posix_spawnp(&pid, argv[0], &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  return rc == 0 ? pid : -1;
}

/// Waits for `pid`; returns its exit code, or 128 + signal when it was killed, or -1.
inline int wait_exit(pid_t pid) {
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/// Runs `python3 script args...` to completion, its stdout (and stderr) into `out_path`; returns the
/// exit code. Debian's /usr/bin/python3 is preferred: python3-h5py is installed for it (a
/// pyenv python3 may come first in PATH).
inline int run_python(const std::string& script, const std::vector<std::string>& args, const std::string& out_path) {
  std::vector<std::string> all = {access("/usr/bin/python3", X_OK) == 0 ? "/usr/bin/python3" : "python3", script};
  all.insert(all.end(), args.begin(), args.end());
  std::remove(out_path.c_str());
  const pid_t pid = spawn_logged(all, out_path);
  return pid > 0 ? wait_exit(pid) : -1;
}

/// The events file `path` decoded by tests/trainer/read_tfevents.py (throws on reader failure).
inline nlohmann::json read_tfevents(const std::string& path, const std::string& scratch_path) {
  const int rc = run_python(std::string(SPADE_SOURCE_DIR) + "/tests/trainer/read_tfevents.py", {path}, scratch_path);
  if (rc != 0) throw std::runtime_error("read_tfevents.py failed on " + path + ": " + read_file(scratch_path));
  return nlohmann::json::parse(read_file(scratch_path));
}

/// rollouts.h5 decoded by tests/trainer/read_rollouts_h5.py with h5py (throws on reader failure).
inline nlohmann::json read_rollouts_h5(const std::string& path, const std::string& scratch_path) {
  const int rc = run_python(std::string(SPADE_SOURCE_DIR) + "/tests/trainer/read_rollouts_h5.py", {path}, scratch_path);
  if (rc != 0) throw std::runtime_error("read_rollouts_h5.py failed on " + path + ": " + read_file(scratch_path));
  return nlohmann::json::parse(read_file(scratch_path));
}

/// Non-empty lines of the file at `path` (0 when it does not exist).
inline int count_lines(const std::string& path) {
  std::ifstream in(path);
  int n = 0;
  for (std::string line; std::getline(in, line);) n += !line.empty();
  return n;
}

/// A run's metrics.jsonl lines without the wall-clock dependent keys (time/..., perf/...): what an
/// interrupted-and-resumed run must reproduce exactly.
inline std::vector<nlohmann::json> comparable_metrics(const std::string& path) {
  std::vector<nlohmann::json> out;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    nlohmann::json j = nlohmann::json::parse(line), kept = nlohmann::json::object();
    for (auto& [k, v] : j.items())
      if (k.rfind("time/", 0) != 0 && k.rfind("perf/", 0) != 0) kept[k] = v;
    out.push_back(kept);
  }
  return out;
}

}  // namespace spade::testutil
