// spade-envd: what a process inherits and a neighbour could change in it -- resource limits, nice,
// scheduling policy, CPU affinity, I/O priority -- read by pid (issue 24). The zygote records its own at
// start; before each spawn it compares itself with that record and restores what it may (when it
// cannot, it asks the host to replace it: envd_zygote.h), and before handing a waiting spare over it
// compares the spare with what the spare was given, and discards a spare that differs or is stopped.
// With per-child namespaces (envd_namespaces.h) and the seccomp filter (envd_seccomp.h) no environment
// can reach these processes at all; these checks are what holds if one layer is missing or broken.
//
// Thread-safety: stateless functions.
#pragma once
#include <sched.h>
#include <sys/resource.h>
#include <sys/types.h>

#include <array>
#include <string>

namespace spade::envsandbox::envd {

struct ProcessState {
  std::array<rlimit, RLIM_NLIMITS> limits{};  // indexed by RLIMIT_* (soft, hard)
  int nice = 0;
  int policy = 0;       // sched_getscheduler
  int rt_priority = 0;  // sched_getparam
  cpu_set_t affinity{};
  int ioprio = 0;       // ioprio_get(IOPRIO_WHO_PROCESS)
};

/// Reads the state of `pid` (0: the caller; else a process the caller may inspect, e.g. its child).
/// Returns "" or why not ("prlimit: No such process").
std::string read_process_state(pid_t pid, ProcessState* out);

/// What differs between `want` and `got`, e.g. "RLIMIT_NPROC 0/0 instead of 4096/4096, nice 19 instead
/// of 0"; "" when they are the same.
std::string state_difference(const ProcessState& want, const ProcessState& got);

/// Sets the caller's own state back to `want` where it differs. Returns "" when the caller's state is
/// `want` afterwards, else what still differs (e.g. a lowered hard limit, which only privilege raises).
std::string restore_own_state(const ProcessState& want);

/// True when `pid`, a child of the caller, is stopped now (SIGSTOP and the like). Does not reap it.
bool child_is_stopped(pid_t pid);

}  // namespace spade::envsandbox::envd
