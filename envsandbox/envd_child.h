// spade-envd: one child process = one environment instance. The zygote forks it; it confines itself
// (own namespaces where the zygote has them, new session, parent-death signal, rlimits, private working
// directory, output capture, descriptors closed) and then serves the child channel of protocol.h until
// the host closes it.
#pragma once
#include <sys/resource.h>
#include <sys/types.h>

#include <array>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "envsandbox/envd_prelude.h"
#include "envsandbox/envd_seccomp.h"

namespace spade::envsandbox::envd {

/// Limits sent by the host with each spawn request (field names as in the JSON).
struct ChildLimits {
  int64_t memory_bytes;      // RLIMIT_AS headroom above the zygote's own VmSize
  int64_t cpu_s;             // RLIMIT_CPU soft limit (SIGXCPU); the hard limit is one second later
  int64_t max_files;         // RLIMIT_NOFILE
  int64_t file_size_bytes;   // RLIMIT_FSIZE (SIGXFSZ ignored: writes fail with EFBIG)
  int64_t max_output_bytes;  // program output kept over the child's lifetime
  int64_t max_reply_bytes;   // cap on one encoded reply
  int64_t max_str_chars;     // cap on one string inside a returned value
  bool seccomp = true;       // load the zygote's seccomp deny-list (envd_seccomp.h); optional, default true
  int64_t spin_us = 0;       // spin before blocking for the next request (frame.h); optional, default 0
  int64_t tmpfs_bytes = int64_t{64} << 20;  // size of the child's own /tmp (per-child namespaces);
                                            // optional, at least 1 MiB

  /// Parses and checks the "limits" object; throws std::runtime_error naming a missing/invalid field.
  static ChildLimits from_json(const nlohmann::json& j);
};

/// What the zygote decided for one child besides its ChildLimits (envd_confine.cpp applies it).
struct ChildSetup {
  /// The child's own pid, IPC and mount namespaces (envd_namespaces.h): its work dir is then
  /// kChildWorkDir on its own tmpfs of limits.tmpfs_bytes, and it is pid 1 (its parent is outside).
  bool own_namespaces = false;
  /// Without own namespaces: the private directory the zygote created for it.
  std::string workdir;
  /// The zygote's pid (the parent a child without own namespaces must see, else the zygote died).
  pid_t zygote_pid = -1;
  /// Every resource limit the child sets on itself, indexed by RLIMIT_* (child_rlimits()).
  std::array<rlimit, RLIM_NLIMITS> limits{};
};

/// The limits of a child: `parent`'s (the zygote's own) with RLIMIT_AS = `vm_bytes` +
/// limits.memory_bytes, RLIMIT_CPU = limits.cpu_s (hard one second later), RLIMIT_CORE 0, RLIMIT_NOFILE
/// and RLIMIT_FSIZE from `limits`; none above the parent's hard limit (raising one fails in containers).
std::array<rlimit, RLIM_NLIMITS> child_rlimits(const std::array<rlimit, RLIM_NLIMITS>& parent,
                                               const ChildLimits& limits, int64_t vm_bytes);

/// Runs in the freshly forked child (after PyOS_AfterFork_Child); never returns. `sock` is the child's
/// end of the channel, `setup` what the zygote decided for it, `filter` the zygote's compiled seccomp
/// filter (loaded when limits.seccomp; the child exits 70 if it cannot be). Before serving requests it
/// sends one hello frame `{"op":"hello"}` (the host reads the child's pid in its own pid namespace from
/// the frame's SCM_CREDENTIALS).
/// When a child loads and plays a small throwaway environment once (in its own namespace; it prints
/// nothing and leaves the instance as it was), so that the copy-on-write faults of the interpreter pages
/// every program touches (compiler, class creation, calls, value encoding) are taken while a spare waits
/// instead of on the caller's path (bench/RESULTS.md: load ~1.5 ms cold).
enum class WarmUp {
  kNone,         // a child forked for a waiting request
  kBeforeFirst,  // a plain spare: after the hello, before reading the first request
  kAfterFirst,   // a preloaded spare: after answering its first request (the preload), whose load has
                 // already taken the compiler's faults, so that the caller's first reset does not take
                 // those of calls and value encoding; only when no request follows within 5 ms (one
                 // handed over while it loaded is answered at once: bench/RESULTS.md)
};

/// `warm`: see WarmUp.
[[noreturn]] void run_child(int sock, const ChildSetup& setup, const ChildLimits& limits, const Prelude& prelude,
                            SeccompFilter* filter, WarmUp warm = WarmUp::kNone);

}  // namespace spade::envsandbox::envd
