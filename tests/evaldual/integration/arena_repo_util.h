// Helpers of the arena-repository integration tests (test_duel_debian.cpp, test_duel_languages.cpp):
// fetch-or-skip setup of a configs/duel/repos spec into a cache kept under the build tree, and a bare
// (unsandboxed) run of a command with the sandbox's environment.
#pragma once
#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "common/error.h"
#include "evaldual/process.h"
#include "evaldual/repo_spec.h"

namespace spade::evaldual::testing {

inline std::string arena_spec_file(const std::string& name) {
  return std::string(SPADE_SOURCE_DIR) + "/configs/duel/repos/" + name + ".yaml";
}

/// The persistent work area: fetched sources and pristine copies survive between runs (setup_repo
/// reuses them while their pin and setup commands are unchanged).
inline std::string arena_cache_dir() { return std::string(SPADE_TEST_TMP) + "/debian_repos"; }

/// setup_repo() on configs/duel/repos/NAME.yaml, or the reason to skip: only a failure to fetch the
/// source skips (setup_repo's "`apt-get source ...` failed" / "`npm pack ...` failed", or a fetch tool
/// that cannot be started); a failing setup command or sandbox fails the test.
inline std::optional<PreparedRepo> setup_or_skip_reason(const std::string& name, std::string* skip_reason) {
  try {
    return setup_repo(load_repo_spec(arena_spec_file(name)), arena_cache_dir());
  } catch (const spade::Error& e) {
    std::string what = e.what();
    bool setup_cmd = what.find("setup command") != std::string::npos;
    bool fetch = what.find("`apt-get source ") != std::string::npos || what.find("`npm pack ") != std::string::npos ||
                 (!setup_cmd && (what.find("apt-get") != std::string::npos || what.find("npm") != std::string::npos));
    if (!fetch) throw;
    *skip_reason = "cannot fetch the source (run scripts/setup.sh for the deb-src entry; npm needs its registry): " + what;
    return std::nullopt;
  }
}

/// `command` without the sandbox: /bin/sh -c in `ws`, with the environment the sandbox sets
/// (evaldual/workspace_sandbox.cpp: --clearenv, then PATH, HOME, TMPDIR, LANG, USER, LOGNAME,
/// PYTHONDONTWRITEBYTECODE).
inline ProcessResult bare_run(const std::string& command, const std::string& ws) {
  ProcessOptions po;
  po.cwd = ws;
  po.timeout_s = 600;
  return run_process({"env", "-i", "PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/tmp", "TMPDIR=/tmp", "LANG=C.UTF-8",
                      "USER=root", "LOGNAME=root", "PYTHONDONTWRITEBYTECODE=1", "/bin/sh", "-c", command},
                     po);
}

}  // namespace spade::evaldual::testing
