// Shared helpers for the envsandbox tests.
#pragma once
#include <dirent.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "common/atomic_file.h"
#include "envsandbox/sandbox.h"

namespace spade::envsandbox::testing {

/// Source of tests/envsandbox/programs/<name>.
inline std::string program(const std::string& name) {
  return read_file(std::string(SPADE_SOURCE_DIR) + "/tests/envsandbox/programs/" + name);
}

/// Options with short deadlines so failing programs cost little test time.
inline SandboxOptions fast_options() {
  SandboxOptions o;
  o.load_timeout_s = 5;
  o.call_timeout_s = 2;
  return o;
}

/// One server shared by the tests of a binary (starting one costs ~0.1 s).
inline EnvServer& shared_server() {
  static EnvServer server(fast_options());
  return server;
}

/// Pids of live (non-zombie) processes whose parent is `ppid`.
inline std::vector<pid_t> children_of(pid_t ppid) {
  std::vector<pid_t> out;
  DIR* proc = opendir("/proc");
  while (dirent* e = readdir(proc)) {
    pid_t pid = static_cast<pid_t>(std::atoi(e->d_name));
    if (pid <= 0) continue;
    std::ifstream stat("/proc/" + std::string(e->d_name) + "/stat");
    std::string line;
    std::getline(stat, line);
    size_t paren = line.rfind(')');
    if (paren == std::string::npos) continue;
    std::istringstream rest(line.substr(paren + 1));
    char state = 0;
    pid_t parent = 0;
    rest >> state >> parent;
    if (parent == ppid) out.push_back(pid);
  }
  closedir(proc);
  return out;
}

/// Waits up to `seconds` until `pid` is gone or a zombie (dead but not yet reaped).
inline bool wait_dead(pid_t pid, double seconds) {
  for (int i = 0; i < seconds * 1000; ++i) {
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string line;
    if (!std::getline(stat, line)) return true;
    size_t paren = line.rfind(')');
    if (paren != std::string::npos && paren + 2 < line.size() && line[paren + 2] == 'Z') return true;
    usleep(1000);
  }
  return false;
}

/// True if /proc/<pid> exists (the process is alive or an unreaped zombie).
inline bool process_exists(pid_t pid) { return access(("/proc/" + std::to_string(pid)).c_str(), F_OK) == 0; }

}  // namespace spade::envsandbox::testing
