// SWE-Duel repositories: YAML specs, pinning/preparing a repository into a work area, running its
// original suite once to record pre-existing failures, and the stale-task check (reference §3 "A
// challenge whose commit differs from the repo config's commit is stale and refused"; §4 "Repos
// pinned by tag"; §7 repos/*.yaml).
//
// Spec (YAML; unknown keys are errors naming the key and file):
//   name: pyfix                       # [A-Za-z0-9._-]+
//   source: pyfix                     # a local directory (relative to the spec file), or
//                                     # a git URL (https://, git@, file://, *.git) with `commit`, or
//                                     # debian:NAME=VERSION (`apt-get source`; needs a deb-src entry), or
//                                     # npm:NAME@X.Y.Z (`npm pack`: the published tarball, exact version)
//   commit: 1a2b...                   # git sources only: the pinned commit (tag or sha)
//   language: python                  # python | c | go | java | javascript (complexity rules per language)
//   setup: [cmd, ...]                 # run once in the sandbox on the pristine copy (optional)
//   test_command: python3 -m pytest -q tests   # the existing suite T_e, run in the workspace root
//   adapter: pytest                   # evaldual/adapters.h name
//   injected_test_command: python3 -m pytest -q -x {tests}   # runs injected test files ({tests}:
//                                     # their workspace-relative paths, shell-quoted); default per language
//   exclude_paths: [build]            # left out of diffs and hashes (evaldual/diff.h DiffOptions)
//   protected_paths: [tests]          # added to the build/test configuration files whose edits by a
//                                     # repairer are stripped before scoring (reference §4 "build-file
//                                     # edits stripped before running"); see kDefaultProtectedPaths
//   timeout_s: 180                    # sandbox deadline per test run, seconds (reference §4)
//
// Thread-safety: load/parse are pure; setup_repo() writes only below its work directory.
#pragma once
#include <string>
#include <vector>

#include "evaldual/adapters.h"
#include "evaldual/diff.h"

namespace spade::evaldual {

/// Where a repository comes from.
enum class SourceKind { local, git, debian, npm };

/// One repository spec (see the file comment for the YAML form).
struct RepoSpec {
  std::string name;
  SourceKind source_kind = SourceKind::local;
  std::string source;          // resolved: absolute local path, git URL, "NAME=VERSION" (debian) or "NAME@X.Y.Z" (npm)
  std::string commit;          // git: the pinned commit; empty otherwise
  std::string language;
  std::vector<std::string> setup;
  std::string test_command;
  std::string adapter;
  std::string injected_test_command;  // contains "{tests}"
  std::vector<std::string> exclude_paths;
  std::vector<std::string> protected_paths;  // kDefaultProtectedPaths + the spec's own
  double timeout_s = 180.0;
  std::string spec_path;       // the file it was read from ("" if parsed from text)

  /// Diff options for this repository: exclude_paths plus the duel's own folder (kDuelDir).
  DiffOptions diff_options() const;
};

/// Build and test configuration a repairer may not change for scoring (DiffOptions::exclude syntax):
/// conftest.py anywhere, pytest/tox/setup configuration, Makefile, CMakeLists.txt, go.mod/go.sum,
/// pom.xml, package.json.
inline const std::vector<std::string>& default_protected_paths() {
  static const std::vector<std::string> p = {"conftest.py", "pytest.ini", "tox.ini", "setup.cfg", "pyproject.toml",
                                             "Makefile", "CMakeLists.txt", "go.mod", "go.sum", "pom.xml", "package.json"};
  return p;
}

/// The duel's own folder inside a workspace: metadata and injected tests live here, never in the PR
/// diff (reference §2 complexity "excluding the tool's own folder").
inline constexpr const char* kDuelDir = ".duel";

/// Parses a spec from YAML text; `origin` names it in errors and relative local sources resolve
/// against its directory. Throws spade::Error naming the file and key (unknown key, missing
/// test_command, bad source, unknown adapter, injected_test_command without {tests}).
RepoSpec parse_repo_spec(const std::string& yaml_text, const std::string& origin);
/// Reads and parses a spec file.
RepoSpec load_repo_spec(const std::string& path);

/// A repository prepared in a work area (written as <work>/<name>/repo.json).
struct PreparedRepo {
  RepoSpec spec;
  std::string pristine_dir;    // <work>/<name>/pristine: the pinned source after setup commands
  std::string pin;             // git: the commit; otherwise "sha256:<tree hash of the source>"
  std::string tree_hash;       // tree_hash(pristine_dir) after setup
  TestOutcome baseline;        // the original suite on pristine
  std::vector<std::string> pre_existing_failures;  // baseline.failed_tests
};

/// Pins and prepares `spec` under `work_dir`: copies (local), clones + checks out `commit` (git),
/// `apt-get source` (debian) or `npm pack` + unpack (npm) into <work>/<name>/pristine, runs the setup commands in the sandbox,
/// runs the original suite once on a scratch copy recording pre-existing failures, and writes
/// repo.json. Idempotent: an existing pristine copy with the same pin and the same setup commands is
/// reused (suite re-run). Debian sources are fetched once into <work>/<name>/src and kept.
/// Throws spade::Error when fetching, a setup command, or the sandbox fails (naming the command and
/// its output tail).
PreparedRepo setup_repo(const RepoSpec& spec, const std::string& work_dir);

/// Loads <work>/<name>/repo.json written by setup_repo(). Throws spade::Error if missing/invalid.
PreparedRepo load_prepared_repo(const std::string& work_dir, const std::string& name);

/// The stale-task check: a task made at `task_pin` may only be played on a repository whose current
/// pin equals it. Throws spade::Error ("stale task ...") otherwise.
void check_not_stale(const std::string& task_id, const std::string& task_pin, const PreparedRepo& repo);

/// The shell command running the injected test files `tests` (workspace-relative) for `spec`.
std::string injected_test_command(const RepoSpec& spec, const std::vector<std::string>& tests);

}  // namespace spade::evaldual
