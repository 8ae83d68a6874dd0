// The environment sandbox, host side: runs untrusted generated environment programs (Python) in
// separate, confined processes and talks to them with deadlines enforced from outside.
//
//   EnvServer server;                                  // starts spade-envd (the zygote) with posix_spawn
//   auto env = server.spawn();                         // forks one confined child (~1-3 ms)
//   CallResult r = env->load(source);                  // exec the program, instantiate its *Env class
//   r = env->reset(42);  r = env->step("\\boxed{1}");  // r.value is the untrusted typed return value
//
// Isolation, outermost first (each layer is a SandboxOptions knob with a safe default; EnvServer::
// isolation() says which are active):
//   pool:  cgroup v1 memory + pids caps for the zygote and all its children (when writable);
//          an unprivileged uid/gid (65534) for every sandbox process when the host runs as root;
//          bubblewrap: user/pid/net/ipc/uts/cgroup namespaces, a read-only root with read-only /usr
//          (+ the few /etc files Python needs), a read-only /dev of the usual character devices,
//          /proc of its own pid namespace, cleared environment, --die-with-parent, --new-session,
//          --cap-drop ALL but CAP_SYS_ADMIN inside its own user namespace (for the zygote to make the
//          per-child namespaces; children drop it). When bwrap cannot create namespaces,
//          namespaces="auto" falls back to the layers below with a one-time warning on stderr that
//          says what is lost (never silently); "require" throws instead.
//   child: its own pid, IPC and mount namespaces (inside bubblewrap; envd_namespaces.h): it is pid 1
//          of its namespace and can name no other process, its IPC objects die with it, its /tmp (work
//          dir and /dev/shm included, tmpfs_bytes) is its own, empty at hand-over and seen by no other
//          child, its /proc shows itself only; no capability; own session/process group,
//          PR_SET_PDEATHSIG, oom_score_adj 1000, RLIMIT_AS (relative to the zygote's size), RLIMIT_CPU,
//          RLIMIT_FSIZE, RLIMIT_NOFILE, RLIMIT_CORE 0, and a seccomp deny-list (fork/exec/non-AF_UNIX
//          sockets/ptrace/mount/bpf/io_uring/keyctl/unshare/setns, signals, pidfds, limits, scheduling
//          and F_SETOWN aimed at other processes...; envd_seccomp.h).
//   the zygote and its spares: restored or replaced when found altered, a stopped or altered spare is
//          discarded, a zygote that cannot fork is replaced (envd_zygote.h).
//
// Nothing here ever runs generated code in the calling process, and nothing a program does (loops,
// huge allocations, os._exit, crashes, floods of output, forged frames) can hang or crash the caller:
// each call has a deadline (poll); on overrun the child's process group gets SIGKILL. Failures are
// values (CallResult::reason), not exceptions. spade::Error is thrown only for usage/setup problems
// (spade-envd missing, invalid options, a method name that is not an identifier).
//
// The library is Python-free and torch-free, and it never forks the calling process (safe in a
// process that runs LibTorch threads): spade-envd is started with posix_spawn.
//
// Thread-safety: EnvServer is thread-safe (spawn() may be called concurrently). An EnvInstance must be
// used by one thread at a time; different instances may be used from different threads in parallel.
#pragma once
#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "envsandbox/frame.h"
#include "envsandbox/py_value.h"

namespace spade::envsandbox {

namespace detail {
class ZygoteProcess;
class PoolCgroup;
}

/// Checks a SandboxOptions::namespaces mode (config sandbox.namespaces): "auto", "require" or "off".
/// Throws spade::Error naming `mode` and the three names otherwise.
void check_namespaces_mode(const std::string& mode);

/// Configuration of an EnvServer. Times in seconds, sizes in bytes.
struct SandboxOptions {
  /// spade-envd binary. "" -> $SPADE_ENVD, else spade-envd next to /proc/self/exe, else the build
  /// tree's bin/spade-envd (SPADE_ENVD_BUILD_PATH).
  std::string envd_path;
  /// Deadline for spade-envd to start and import the allowed modules.
  double startup_timeout_s = 30;
  /// Per-call deadlines (load; reset/step/call/has/repair). Reference §4: "env step/load 30 s".
  double load_timeout_s = 30;
  double call_timeout_s = 30;
  /// RLIMIT_AS headroom above the zygote's own VmSize (never an absolute limit: sandbox anchors).
  int64_t memory_limit_bytes = int64_t{1} << 30;
  /// RLIMIT_CPU of a child over its whole life (soft; SIGKILL one second later).
  int cpu_limit_s = 60;
  /// RLIMIT_NOFILE and RLIMIT_FSIZE of a child.
  int max_open_files = 64;
  int64_t file_size_limit_bytes = int64_t{16} << 20;
  /// Program output (print, sys.stderr) kept per instance; the rest is dropped.
  int64_t max_output_bytes = 65536;
  /// Cap on one reply frame from a child; must exceed max_output_bytes by at least 64 KiB.
  int64_t max_reply_bytes = int64_t{1} << 20;
  /// Cap on one string inside a returned value, in characters (an observation longer than this
  /// arrives cut, with PyValue::cut() set).
  int64_t max_obs_chars = 16384;

  // --- Isolation layers (see the top of this file). ---
  /// "auto": bubblewrap namespaces when they can be created, else a one-time warning on stderr and
  /// the remaining layers only; "require": throw spade::Error when they cannot; "off": never use them.
  std::string namespaces = "auto";  // check_namespaces_mode() lists the names
  /// bubblewrap binary. "" -> /usr/bin/bwrap, else `bwrap` on $PATH.
  std::string bwrap_path;
  /// Size cap of each child's own /tmp tmpfs, which holds its work dir and backs its /dev/shm (bytes;
  /// per-child namespaces only: IsolationInfo::child_namespaces). Charged to the pool's memory cgroup
  /// while the child lives, freed when it exits. Also the size of the pool's shared /tmp, which only
  /// the zygote sees with per-child namespaces and which holds every child's work dir without them
  /// (bubblewrap without per-child namespaces).
  int64_t tmpfs_bytes = int64_t{64} << 20;
  /// Inside bubblewrap, give every child its own pid, IPC and mount namespaces (envd_namespaces.h). When
  /// false (or when they cannot be made: IsolationInfo::child_namespaces says which), children share
  /// the pool's /tmp and see each other's pids; seccomp still keeps them apart (README "Fallback").
  bool child_namespaces = true;
  /// Extra host paths bound read-only at the same place inside the namespaces (e.g. a Python prefix
  /// outside /usr).
  std::vector<std::string> extra_ro_binds;
  /// Load the seccomp deny-list in every child.
  bool seccomp = true;
  /// When the host runs as root, run the zygote and all children as sandbox_uid/sandbox_gid
  /// (RLIMIT_NPROC and file permissions do not bind root).
  bool drop_privileges = true;
  int64_t sandbox_uid = 65534, sandbox_gid = 65534;
  /// Cap the pool with cgroup v1 memory and pids controllers when they are writable (silently skipped,
  /// and reported in EnvServer::isolation(), when not).
  bool cgroups = true;
  /// Memory cap of the whole pool (zygote + children + tmpfs), bytes; 0 -> half of MemTotal.
  /// When it is hit the kernel kills the child with the highest oom_score (oom_score_adj 1000):
  /// reason "memory".
  int64_t pool_memory_bytes = 0;
  /// Task (process + thread) cap of the whole pool.
  int64_t pool_max_tasks = 4096;
  /// Children kept forked, confined and waiting in the zygote, so that spawn() hands one over instead
  /// of forking on the caller's path (start-up = load + reset; envd_zygote.h). Each costs an idle
  /// process (~2.4 MiB resident, bench/RESULTS.md) and counts against pool_max_tasks. 0 disables.
  int spare_children = 2;
  /// Most microseconds a waiting reader polls without blocking before it sleeps: the host waiting for
  /// a child's reply or the zygote's, and a child waiting for its next request (frame.h, SpinBudget:
  /// a sleeping reader costs an inter-processor wake-up, tens of microseconds on VMs; the spin is
  /// dropped on a channel whose waits outlast it, e.g. when no core is free). 0: always block.
  /// In [0, 10000]; EnvServer throws spade::Error otherwise.
  int spin_us = 50;
  /// Children kept waiting with the most recently requested program already loaded, for
  /// EnvServer::spawn_loaded (in addition to spare_children; envd_zygote.h): start-up is then the
  /// hand-over and reset() only. A spawn_loaded with another program replaces them (their work is
  /// lost), so this pays off when one program is started several times in a row (the G episodes of
  /// one environment). 0 disables.
  int preload_spares = 2;
};

/// Which isolation layers an EnvServer actually has (they depend on the machine).
struct IsolationInfo {
  /// The zygote runs inside bubblewrap namespaces.
  bool namespaces = false;
  /// Why not (bwrap's message, or "disabled by SandboxOptions::namespaces"); "" when namespaces.
  std::string fallback_reason;
  /// The bwrap binary used ("" when none).
  std::string bwrap_path;
  /// Every child has its own pid, IPC and mount namespaces (needs `namespaces`).
  bool child_namespaces = false;
  /// Why not ("" when child_namespaces).
  std::string child_namespaces_reason;
  /// Children load the seccomp deny-list.
  bool seccomp = false;
  /// Effective uid/gid of the zygote (and children) as seen inside the sandbox.
  int64_t uid = -1, gid = -1;
  /// Uid the sandbox processes have on the host (sandbox_uid after a drop, else the host's uid).
  int64_t host_uid = -1;
  /// cgroup v1 directories of the pool ("" when not capped) and why not.
  std::string cgroup_memory_dir, cgroup_pids_dir, cgroup_note;
  int64_t pool_memory_bytes = 0, pool_max_tasks = 0;

  /// All fields as JSON (for reports and `spade bench sandbox`).
  nlohmann::json to_json() const;
};

/// How one call into an environment process ended. Stable ids (call_status_name) for files and logs:
/// "ok"; "exception" (the program raised; detail "Type: message"); "memory" (MemoryError, e.g.
/// RLIMIT_AS, or SIGKILL by the pool cgroup's OOM killer); "timeout" (deadline passed, process killed);
/// "exited" (the process ended on its own, e.g. os._exit); "signal" (killed by a signal, e.g. SIGSEGV,
/// or the CPU time limit); "protocol" (an invalid or oversized reply, or a request the child refused);
/// "unavailable" (no process could be created for it, even by a restarted zygote: e.g. the pool's
/// task cap is full).
enum class CallStatus { kOk, kException, kMemory, kTimeout, kExited, kSignal, kProtocol, kUnavailable };
const char* call_status_name(CallStatus status);

/// Outcome of one call into an environment process.
struct CallResult {
  CallStatus status = CallStatus::kOk;
  /// Readable explanation for a failure: which call, what happened, the exception message.
  std::string detail;
  /// The returned value (None unless ok()).
  PyValue value;
  /// For kException/kMemory: the Python exception type (e.g. "SyntaxError"), str(exception), the
  /// traceback (capped) and, for load(), the stage that failed: "compile", "exec", "find" (no *Env
  /// class) or "init".
  std::string exception_type, message, traceback, stage;
  /// Wall time of the call as seen by the host.
  double seconds = 0;

  bool ok() const { return status == CallStatus::kOk; }
  /// The program raised (kException) or ran out of memory (kMemory): a defined Python answer, the
  /// process still healthy.
  bool raised() const { return status == CallStatus::kException || status == CallStatus::kMemory; }
};

class EnvInstance;

/// Owns one spade-envd zygote process and hands out environment instances.
class EnvServer {
 public:
  /// Starts spade-envd and waits until it is ready. Throws spade::Error if the binary cannot be found
  /// (naming every place looked at), the options are invalid, or it fails to start in time.
  explicit EnvServer(SandboxOptions options = {});
  /// Stops the zygote, which kills and reaps every child (live EnvInstances then fail with "exited").
  ~EnvServer();
  EnvServer(const EnvServer&) = delete;
  EnvServer& operator=(const EnvServer&) = delete;

  /// Hands over a new confined child with no program loaded (a waiting spare or a fresh fork). Starts a
  /// new zygote first if it died, and when it cannot fork or was altered (envd_zygote.h), retrying once;
  /// the old zygote goes on serving the instances it handed over until they are released. Never throws
  /// for a child that cannot be had: the instance is then dead and every call returns "unavailable"
  /// with the cause (so one failed environment never stops a run).
  std::unique_ptr<EnvInstance> spawn();

  /// spawn() then EnvInstance::load(source, max_turns_cap), with the load possibly done ahead of the
  /// caller: the request asks the zygote to keep options().preload_spares children that have already
  /// received this load request (protocol.h). When one is waiting, the load's reply is read from its
  /// channel; otherwise the load is sent as usual. Either way `*load` gets what load() would return
  /// (a preloaded child's time and deadline count from the hand-over). A program whose load ends in
  /// anything but ok or "exception" (a hang, a crash, memory) is never preloaded again by this server.
  /// Plain spawn() calls (validation) leave the preloaded spares in place. Never throws, like spawn().
  std::unique_ptr<EnvInstance> spawn_loaded(const std::string& source, int max_turns_cap, CallResult* load);

  const SandboxOptions& options() const { return options_; }

  /// Path of the spade-envd binary in use.
  const std::string& envd_path() const { return envd_path_; }

  /// The isolation layers in effect (decided at construction).
  const IsolationInfo& isolation() const { return isolation_; }

  /// Pool memory now and at peak, in bytes (cgroup memory.usage_in_bytes / max_usage_in_bytes); -1
  /// without a memory cgroup.
  int64_t pool_memory_bytes() const;
  int64_t pool_peak_memory_bytes() const;
  /// Host pids of every process in the pool (zygote, children, anything they left), from the pids
  /// cgroup; empty without one.
  std::vector<int> pool_pids() const;
  /// Host pid of the process posix_spawned for the pool (bwrap or the zygote); -1 if none is running.
  pid_t zygote_host_pid();

 private:
  std::shared_ptr<detail::ZygoteProcess> start_zygote();
  /// spawn() and spawn_loaded(): `preload` is a load request for `preload_spares` preloaded spares
  /// ("" clears them; preload_spares < 0 leaves them as they are), ZygoteProcess::spawn.
  std::unique_ptr<EnvInstance> spawn_child(const std::string& preload, int preload_spares, bool* loaded);

  SandboxOptions options_;
  std::string envd_path_;
  std::vector<std::string> launch_argv_;
  IsolationInfo isolation_;
  std::shared_ptr<detail::PoolCgroup> cgroup_;
  std::mutex mu_;
  std::shared_ptr<detail::ZygoteProcess> zygote_;
  std::set<std::string> no_preload_;  // load requests whose load timed out or killed its process
};

/// One environment process: holds at most one loaded program and its instance of the *Env class.
/// Once a call kills or loses the process (timeout, exit, signal, protocol), alive() is false and
/// every later call returns the same reason without doing anything.
class EnvInstance {
 public:
  /// Closes the channel and has the zygote kill the process group.
  ~EnvInstance();
  EnvInstance(const EnvInstance&) = delete;
  EnvInstance& operator=(const EnvInstance&) = delete;

  /// Execs `source` in a fresh module holding the pre-injected names (reference §2), finds the first
  /// class defined by the program whose name ends in "Env" (skipping bases of other such classes) and
  /// instantiates it with max_turns = min(class default, max_turns_cap) when the constructor names
  /// max_turns. ok: value is the class name (str) and max_turns() is set. A SyntaxError gives reason
  /// "exception", stage "compile". `timeout_s` overrides options().load_timeout_s.
  CallResult load(const std::string& source, int max_turns_cap = 25, std::optional<double> timeout_s = {});
  /// env.reset(seed=seed), or env.reset() for nullopt. ok: value is whatever reset returned.
  CallResult reset(std::optional<int64_t> seed, std::optional<double> timeout_s = {});
  /// env.step(action). ok: value is whatever step returned.
  CallResult step(const std::string& action, std::optional<double> timeout_s = {});
  /// env.<method>() with no arguments (e.g. "solution", "close"). Throws spade::Error if `method` is
  /// not a Python identifier.
  CallResult call(const std::string& method, std::optional<double> timeout_s = {});
  /// ok: value is a bool, true if env.<method> exists and is callable. Throws like call().
  CallResult has(const std::string& method, std::optional<double> timeout_s = {});
  /// f-string brace repair of `source` (reference §2); needs no loaded program. ok: value is a str.
  CallResult repair(const std::string& source, std::optional<double> timeout_s = {});
  /// Reseeds the process's global RNGs (random.seed(seed), numpy.random.seed(seed % 2^32)); used to
  /// check that a program does not depend on unseeded global randomness. ok: value is None.
  CallResult reseed_globals(int64_t seed, std::optional<double> timeout_s = {});
  /// Tool-use facts (reference §7, §4 gate 2) of the loaded program: for each seed,
  /// reset(seed=seed) then every _message_criteria entry evaluated on _state; and the _tools schemas
  /// checked (JSON Schema objects, one callable tool_<name> each). ok: value is a dict
  /// {"seeds": [{"seed": int, "reset": "ok" | "Type: msg", "criteria": ["ok" | "Type: msg", ...]}],
  ///  "tools": [str...], "schema_problem": str | None}, built from the program's objects by trusted
  /// helper code; still untrusted input (check types).
  CallResult tool_use_report(const std::vector<int64_t>& seeds, std::optional<double> timeout_s = {});
  /// The loaded tool-use program's current tools (after its reset): ok: value is a str, the JSON text
  /// of an OpenAI `tools` list in _tools order, written by trusted helper code from the program's
  /// schemas (checked as tool_use_report checks them); kException naming the problem otherwise.
  CallResult tool_schemas(std::optional<double> timeout_s = {});

  /// max_turns passed to the constructor by load(); nullopt if it takes no max_turns (or not loaded).
  std::optional<int64_t> max_turns() const { return max_turns_; }
  /// False once the process was killed or lost.
  bool alive() const { return dead_status_ == CallStatus::kOk; }
  /// True when EnvServer::spawn_loaded handed over a child that had loaded the program ahead of the
  /// call (diagnostics and tests).
  bool preloaded() const { return preloaded_; }
  /// SIGKILLs the process group now; later calls return "exited".
  void kill();
  /// Program output (print, sys.stderr) received so far, capped at options().max_output_bytes.
  const std::string& captured_output() const { return output_; }
  /// Process id of the child as the host sees it (for diagnostics; with namespaces it differs from the
  /// pid inside the sandbox). The first call may wait up to call_timeout_s for the child's hello; -1
  /// if the child died before saying it.
  pid_t pid() const;

 private:
  friend class EnvServer;
  EnvInstance(std::shared_ptr<detail::ZygoteProcess> zygote, pid_t pid, int fd, const SandboxOptions& options);
  /// An instance without a process: every call returns reason "unavailable" with `detail`.
  static std::unique_ptr<EnvInstance> unavailable(const SandboxOptions& options, const std::string& detail);
  /// Reads the child's hello frame (once) to learn its host pid; false if the channel failed.
  bool read_hello(Clock::time_point deadline) const;

  static nlohmann::json load_request(const std::string& source, int max_turns_cap);
  /// The reply to a load request the zygote wrote before the hand-over (EnvServer::spawn_loaded).
  CallResult receive_preloaded_load();
  /// Checks a load reply's shape; sets max_turns_.
  CallResult check_load(CallResult r);
  /// Sends `request` and receives its reply.
  CallResult request(const nlohmann::json& request, const std::string& what, double timeout_s);
  /// Receives the reply to a request written with status `sent` (the hello first, once).
  CallResult receive(FrameStatus sent, std::string io_error, const std::string& what, double timeout_s,
                     Clock::time_point start, Clock::time_point deadline);
  CallResult fail(CallStatus status, const std::string& detail, bool kill_process);
  CallResult lost(const std::string& what);
  void keep_output(const nlohmann::json& reply);

  std::shared_ptr<detail::ZygoteProcess> zygote_;  // null for an unavailable instance
  pid_t pid_;  // in the zygote's pid namespace (control requests)
  mutable pid_t host_pid_ = -1;
  mutable bool hello_read_ = false;
  int64_t oom_kills_at_start_ = -1;
  int fd_;
  SandboxOptions options_;
  CallStatus dead_status_ = CallStatus::kOk;  // kOk while the process lives
  std::string dead_detail_;
  std::string output_;
  std::optional<int64_t> max_turns_;
  SpinBudget spin_;  // waits for this child's replies (SandboxOptions::spin_us)
  bool preloaded_ = false;
};

}  // namespace spade::envsandbox
