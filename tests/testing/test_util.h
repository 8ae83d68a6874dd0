// Small helpers shared by test files (header-only; namespace spade::fixtures).
#pragma once
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <functional>
#include <string>

#include "common/error.h"

namespace spade::fixtures {

/// An empty directory SPADE_TEST_TMP/<group>/<name> (removed first if it exists).
inline std::string fresh_test_dir(const std::string& group, const std::string& name) {
  std::string d = std::string(SPADE_TEST_TMP) + "/" + group + "/" + name;
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d;
}

/// What a shell command printed on stdout and its exit status (-1 if it did not exit normally or could
/// not be started).
struct CommandResult {
  int rc = -1;
  std::string out;
};

/// Runs `cmd` through /bin/sh (popen) and collects its stdout.
inline CommandResult run_command(const std::string& cmd) {
  CommandResult r;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  char buf[4096];
  while (fgets(buf, sizeof buf, p)) r.out += buf;
  const int status = pclose(p);
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

/// The message of the spade::Error that `f` throws, or "" when it throws none.
inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const spade::Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace spade::fixtures
