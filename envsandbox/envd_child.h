// spade-envd: one child process = one environment instance. The zygote forks it; it confines itself
// (new session, parent-death signal, rlimits, private working directory, output capture, descriptors
// closed) and then serves the child channel of protocol.h until the host closes it.
#pragma once
#include <sys/types.h>

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

  /// Parses and checks the "limits" object; throws std::runtime_error naming a missing/invalid field.
  static ChildLimits from_json(const nlohmann::json& j);
};

/// Runs in the freshly forked child (after PyOS_AfterFork_Child); never returns. `sock` is the child's
/// end of the channel, `workdir` its private directory (created by the zygote), `zygote_pid` the parent,
/// `filter` the zygote's compiled seccomp filter (loaded when limits.seccomp; the child exits 70 if it
/// cannot be). Before serving requests it sends one hello frame `{"op":"hello"}` (the host reads the
/// child's pid in its own pid namespace from the frame's SCM_CREDENTIALS).
/// `warm` (spare children, envd_zygote.h): after the hello, and before reading the first request, load
/// and play a small throwaway environment once, so that the copy-on-write faults of the interpreter
/// pages every program touches (compiler, class creation, calls, value encoding) are taken while the
/// spare waits instead of on the caller's first load (bench/RESULTS.md: load ~1.5 ms cold).
[[noreturn]] void run_child(int sock, const std::string& workdir, const ChildLimits& limits,
                            const Prelude& prelude, pid_t zygote_pid, SeccompFilter* filter, bool warm = false);

}  // namespace spade::envsandbox::envd
