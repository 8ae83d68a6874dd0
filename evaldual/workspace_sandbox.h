// The SWE-Duel workspace sandbox: every agent command and every test run executes here, in a
// bubblewrap sandbox in place of the reference's per-run Docker container (reference §4 "Docker
// executor": network none, 4096 MB, 1 CPU, 180 s timeout -> kill, rc -1, timed_out).
//
// Layers, outermost first:
//   - a host-side deadline: at timeout_s the whole process group is SIGKILLed (rc -1, timed_out);
//   - cgroup v1 pids and memory caps (max_processes, memory_bytes) when the hierarchy is writable
//     (as root here); otherwise RLIMIT_AS stands in for the memory cap and the pids cap is
//     absent (SandboxInfo says which);
//   - rlimits: CPU seconds, file size, no core files;
//   - bwrap: new user/pid/net/ipc/uts namespaces (only loopback inside), --die-with-parent,
//     --new-session, --cap-drop ALL, user namespaces disabled inside; read-only binds of /usr (+ the
//     /bin, /lib* links) and a few /etc entries, `ro_binds`; the workspace bound read-write at
//     mount_point; a size-capped tmpfs at /tmp; a cleared environment.
// After every command the cgroup is emptied (SIGKILL) and removed: no process outlives run().
// run() never falls back to running a command unsandboxed: without bwrap it throws.
//
// Thread-safety: a WorkspaceSandbox is immutable after construction; run() is thread-safe (each call
// has its own process group and cgroups), but concurrent commands share the one workspace.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace spade::evaldual {

/// Resource limits of one command (reference §4 and arena.yaml: 180 s, 4096 MB).
struct SandboxLimits {
  double timeout_s = 180.0;                 // wall clock, seconds; host-enforced
  int64_t memory_bytes = 4096LL << 20;      // memory cgroup cap (or RLIMIT_AS without cgroups), bytes
  int64_t cpu_seconds = 0;                  // RLIMIT_CPU, seconds; 0: ceil(timeout_s) + 5
  int64_t max_processes = 256;              // pids cgroup cap (tasks, threads included)
  int64_t tmpfs_bytes = 256LL << 20;        // size of the /tmp tmpfs, bytes
  int64_t file_size_bytes = 1LL << 30;      // RLIMIT_FSIZE, bytes
  size_t output_cap_bytes = 1 << 20;        // combined stdout+stderr kept (head + tail), bytes
};

/// How the sandbox is laid out.
struct SandboxOptions {
  SandboxLimits limits;
  std::string mount_point = "/workspace";   // where the workspace appears inside; also the cwd
  std::vector<std::string> ro_binds;        // extra host paths bound read-only at the same place
  std::vector<std::pair<std::string, std::string>> env;  // extra environment (after the defaults)
  std::string bwrap_path;                   // empty: /usr/bin/bwrap, then $PATH
};

/// What one command did.
struct CommandResult {
  int rc = -1;                   // exit status of the shell; 128+N if killed by signal N; -1 on timeout
  bool timed_out = false;        // deadline passed, everything killed
  bool oom_killed = false;       // the memory cgroup's OOM killer fired during the command
  std::string output;            // stdout+stderr, capped (see SandboxLimits::output_cap_bytes)
  bool output_truncated = false;
  double seconds = 0.0;          // wall clock, seconds
  int leftover_killed = 0;       // processes still alive after the shell ended, killed by run()
};

/// Which layers a sandbox got (for `spade duel doctor`).
struct SandboxInfo {
  bool bwrap = false;
  bool pids_cgroup = false;
  bool memory_cgroup = false;
  std::string bwrap_path;
  std::string detail;            // why a layer is missing
};

/// A workspace directory and the sandbox its commands run in. Not copyable (holds no resources,
/// but copying a sandbox is never what a caller means).
class WorkspaceSandbox {
 public:
  /// `workspace`: an existing host directory. Throws spade::Error if it is missing.
  WorkspaceSandbox(std::string workspace, SandboxOptions options = {});
  WorkspaceSandbox(const WorkspaceSandbox&) = delete;
  WorkspaceSandbox& operator=(const WorkspaceSandbox&) = delete;

  /// Runs `command` with /bin/sh -c inside the sandbox, cwd = mount_point, under options().limits.
  /// Returns the result (non-zero rc, timeout and OOM are values). Throws spade::Error when bwrap is
  /// missing or the sandbox cannot be started (names bwrap's own message).
  CommandResult run(const std::string& command) const;
  /// The same under other limits.
  CommandResult run(const std::string& command, const SandboxLimits& limits) const;

  const std::string& workspace() const { return workspace_; }
  const SandboxOptions& options() const { return options_; }

  /// Probes the layers (runs `true` in a sandbox over a temporary directory, ~20 ms).
  static SandboxInfo probe();

 private:
  std::string workspace_;
  SandboxOptions options_;
};

}  // namespace spade::evaldual
