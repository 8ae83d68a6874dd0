// The environment sandbox, host side: runs untrusted generated environment programs (Python) in
// separate, confined processes and talks to them with deadlines enforced from outside.
//
//   EnvServer server;                                  // starts spade-envd (the zygote) with posix_spawn
//   auto env = server.spawn();                         // forks one confined child (~1-3 ms)
//   CallResult r = env->load(source);                  // exec the program, instantiate its *Env class
//   r = env->reset(42);  r = env->step("\\boxed{1}");  // r.value is the untrusted typed return value
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
#include <string>

#include "envsandbox/py_value.h"

namespace spade::envsandbox {

namespace detail {
class ZygoteProcess;
}

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
  /// RLIMIT_AS headroom above the zygote's own VmSize (never an absolute limit: sandbox-anchors.md).
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
};

/// Outcome of one call into an environment process.
struct CallResult {
  /// Stable id: "ok"; "exception" (the program raised; detail "Type: message"); "memory"
  /// (MemoryError, e.g. RLIMIT_AS); "timeout" (deadline passed, process killed); "exited" (the
  /// process ended on its own, e.g. os._exit); "signal" (killed by a signal, e.g. SIGSEGV, SIGXCPU);
  /// "protocol" (an invalid or oversized reply, or a request the child refused).
  std::string reason = "ok";
  /// Readable explanation for a failure: which call, what happened, the exception message.
  std::string detail;
  /// The returned value (None unless ok()).
  PyValue value;
  /// For "exception"/"memory": the Python exception type (e.g. "SyntaxError"), str(exception), the
  /// traceback (capped) and, for load(), the stage that failed: "compile", "exec", "find" (no *Env
  /// class) or "init".
  std::string exception_type, message, traceback, stage;
  /// Wall time of the call as seen by the host.
  double seconds = 0;

  bool ok() const { return reason == "ok"; }
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

  /// Forks a new confined child with no program loaded. Restarts the zygote first if it died. Throws
  /// spade::Error if no child can be created (e.g. fork fails with EAGAIN, or the restart fails).
  std::unique_ptr<EnvInstance> spawn();

  const SandboxOptions& options() const { return options_; }

  /// Path of the spade-envd binary in use.
  const std::string& envd_path() const { return envd_path_; }

 private:
  SandboxOptions options_;
  std::string envd_path_;
  std::mutex mu_;
  std::shared_ptr<detail::ZygoteProcess> zygote_;
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

  /// max_turns passed to the constructor by load(); nullopt if it takes no max_turns (or not loaded).
  std::optional<int64_t> max_turns() const { return max_turns_; }
  /// False once the process was killed or lost.
  bool alive() const { return dead_reason_.empty(); }
  /// SIGKILLs the process group now; later calls return "exited".
  void kill();
  /// Program output (print, sys.stderr) received so far, capped at options().max_output_bytes.
  const std::string& captured_output() const { return output_; }
  /// Process id of the child (for diagnostics).
  pid_t pid() const { return pid_; }

 private:
  friend class EnvServer;
  EnvInstance(std::shared_ptr<detail::ZygoteProcess> zygote, pid_t pid, int fd, const SandboxOptions& options);

  CallResult request(const nlohmann::json& request, const std::string& what, double timeout_s);
  CallResult fail(const std::string& reason, const std::string& detail, bool kill_process);
  CallResult lost(const std::string& what);
  void keep_output(const nlohmann::json& reply);

  std::shared_ptr<detail::ZygoteProcess> zygote_;
  pid_t pid_;
  int fd_;
  SandboxOptions options_;
  std::string dead_reason_, dead_detail_;
  std::string output_;
  std::optional<int64_t> max_turns_;
};

}  // namespace spade::envsandbox
