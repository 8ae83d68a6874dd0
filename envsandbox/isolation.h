// Internal to envsandbox/: the layers set up around the whole spade-envd pool before the zygote starts
// (the per-child layers are in envd_confine.cpp and envd_seccomp.cpp):
//   - cgroup v1 memory and pids caps (PoolCgroup), where the hierarchy is writable (as root here);
//   - an unprivileged uid/gid for every sandbox process when the host runs as root;
//   - bubblewrap namespaces (user, pid, net, ipc, uts, cgroup; mount with a read-only root, read-only
//     system binds, a read-only /dev of the usual character devices and a size-capped tmpfs /tmp;
//     --die-with-parent, --new-session, --cap-drop ALL but CAP_SYS_ADMIN inside the sandbox's user
//     namespace, cleared environment), probed once per distinct command line, with spade-envd told to
//     give each child its own namespaces (--child-namespaces, envd_namespaces.h); when bwrap cannot
//     create them the plan falls back (with a one-time warning on stderr saying what is lost) or
//     throws, as SandboxOptions::namespaces says.
// The plan is a command line: `spade-envd --launch [--cgroup F]... [--uid U --gid G] -- [bwrap ...]
// spade-envd [--child-namespaces]` (see envd_main.cpp), started with posix_spawn by ZygoteProcess.
//
// Thread-safety: plan_launch and PoolCgroup methods are thread-safe.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "envsandbox/sandbox.h"

namespace spade::envsandbox::detail {

/// A pair of cgroup v1 directories (memory, pids) holding one pool; removed on destruction.
class PoolCgroup {
 public:
  /// Creates `spade-envd-<pid>-<n>` below this process's own cgroup in each controller and writes the
  /// caps (memory.limit_in_bytes and, if present, memory.memsw.limit_in_bytes = `memory_bytes`;
  /// pids.max = `max_tasks`). Returns nullptr (with `*why` set) when cgroup v1 is absent or not
  /// writable; never throws.
  static std::shared_ptr<PoolCgroup> create(int64_t memory_bytes, int64_t max_tasks, std::string* why);
  /// rmdir both directories (retrying up to 2 s while exiting tasks drain).
  ~PoolCgroup();

  const std::string& memory_dir() const { return memory_dir_; }
  const std::string& pids_dir() const { return pids_dir_; }
  /// The cgroup.procs files the launcher joins.
  std::vector<std::string> procs_files() const;
  /// Kills by the cgroup's OOM killer so far ("oom_kill" of memory.oom_control); -1 if unknown.
  int64_t oom_kills() const;
  /// memory.max_usage_in_bytes (peak charge of the pool, bytes); -1 if unknown.
  int64_t peak_memory_bytes() const;
  /// memory.usage_in_bytes (bytes); -1 if unknown.
  int64_t memory_bytes() const;
  /// Pids in the pool's pids cgroup now (cgroup.procs, as seen by the host).
  std::vector<int> pids() const;

 private:
  std::string memory_dir_, pids_dir_;
};

/// How to start the zygote.
struct LaunchPlan {
  std::vector<std::string> argv;  // argv[0]: the program to posix_spawn
  IsolationInfo info;             // namespaces/fallback_reason/uid/gid/bwrap/cgroup fields filled
};

/// Builds the plan for `options` (envd at `envd_path`, cgroup may be null). Probes bwrap (once per
/// distinct command line per process, ~20 ms) unless options.namespaces is "off". Throws spade::Error
/// when options.namespaces is "require" and bwrap cannot be used, naming bwrap's own message.
LaunchPlan plan_launch(const SandboxOptions& options, const std::string& envd_path, const PoolCgroup* cgroup);

/// Prints `message` on stderr the first time `key` is seen in this process.
void warn_once(const std::string& key, const std::string& message);

}  // namespace spade::envsandbox::detail
