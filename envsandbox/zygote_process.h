// Internal to envsandbox/: the host's handle on one spade-envd process and its control channel
// (protocol.h). Started with posix_spawn (never fork: the host may run LibTorch threads), with an
// empty signal mask, default signal dispositions, its own process group and a minimal environment,
// from one process-wide thread that lives until exit (so bwrap's --die-with-parent, which follows the
// creating thread, never fires while the host process lives).
//
// Thread-safety: all methods are thread-safe (one control request at a time).
#pragma once
#include <sys/types.h>

#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "envsandbox/frame.h"

namespace spade::envsandbox::detail {

class PoolCgroup;

/// Where spade-envd is looked for: `configured` if non-empty, else $SPADE_ENVD, else next to
/// /proc/self/exe, else SPADE_ENVD_BUILD_PATH. Throws spade::Error listing every place tried.
std::string locate_envd(const std::string& configured);

class ZygoteProcess {
 public:
  /// Starts `envd_path` and waits up to `startup_timeout_s` for its ready message. Throws spade::Error
  /// with the reason (exec failure, error message from spade-envd, timeout).
  static std::shared_ptr<ZygoteProcess> start(const std::string& envd_path, double startup_timeout_s);
  /// Same with a full command line (isolation.h LaunchPlan::argv; argv[0] is executed). `private_tmp`:
  /// the zygote's temporary root lives in its own mount namespace, so the host never removes it.
  static std::shared_ptr<ZygoteProcess> start(const std::vector<std::string>& argv, double startup_timeout_s,
                                              bool private_tmp);

  /// The zygote's ready message (protocol.h).
  const nlohmann::json& ready() const { return ready_; }
  /// Host pid of the posix_spawned process (launcher -> bwrap or zygote).
  pid_t host_pid() const { return pid_; }

  /// stop().
  ~ZygoteProcess();

  /// Closes the channel (the zygote then kills and reaps its children), waits up to 5 s for it to
  /// exit, SIGKILLs it otherwise, and reaps it. Idempotent; later requests fail.
  void stop();

  /// False once a control request failed or the process exited.
  bool alive();

  /// Gets a child with `limits` (envd_child.h ChildLimits fields): a waiting spare or a fresh fork, and
  /// asks the zygote to keep `spares` more waiting (protocol.h). On success sets `*pid` and `*fd` (the
  /// host end of the child's channel, close-on-exec) and returns true; else sets `*error`, and
  /// `*retire` (when non-null) to true if the zygote asked to be replaced (it cannot fork, or it was
  /// altered beyond repair: envd_zygote.h) or the channel failed.
  /// `preload`/`preload_spares` (protocol.h): a load request for preloaded spares ("" clears them);
  /// preload_spares < 0 sends neither, leaving the zygote's preloaded spares as they are. *loaded
  /// (when non-null) tells whether the child handed over already received `preload`.
  bool spawn(const nlohmann::json& limits, int spares, pid_t* pid, int* fd, std::string* error,
             const std::string& preload = "", int preload_spares = -1, bool* loaded = nullptr,
             bool* retire = nullptr);

  /// The child's state: {"state":"running"|"exited"|"signaled"|"unknown", "code"/"signal", "cpu_s"}.
  /// "unknown" when the zygote cannot be asked.
  nlohmann::json status(pid_t pid);

  /// SIGKILLs the child's process group (kill), and also forgets its status once reaped (release).
  void kill(pid_t pid);
  void release(pid_t pid);

  ZygoteProcess(pid_t pid, int fd) : pid_(pid), fd_(fd) {}

  /// The pool's cgroup (null without one): kept alive, and so not removed, while this handle lives.
  std::shared_ptr<PoolCgroup> cgroup;
  /// Spin before blocking on a control reply (SandboxOptions::spin_us); used under the request mutex.
  SpinBudget spin;
  /// Kills by the pool cgroup's OOM killer so far; -1 without a memory cgroup.
  int64_t oom_kills() const;

 private:
  bool request(const nlohmann::json& req, nlohmann::json* reply, int* passed_fd, std::string* error,
               bool* retire = nullptr);

  std::mutex mu_;
  pid_t pid_;
  int fd_;
  bool broken_ = false;
  std::string tmp_root_;  // the zygote's directory of child working directories
  nlohmann::json ready_;
};

}  // namespace spade::envsandbox::detail
