// spade-envd: process confinement applied by a child right after fork, before any program code runs.
// Its own mount and IPC namespaces with its own /tmp, /dev/shm and /proc (where the zygote made it pid
// 1 of its own pid namespace, envd_namespaces.h), every capability dropped, a new session (own process
// group, so the host can SIGKILL the whole group), parent-death signal, oom_score_adj 1000, every
// rlimit set to what the zygote computed (ChildSetup::limits: address space relative to the zygote,
// CPU, core, files, file size), stdin/stdout/stderr on /dev/null, every other descriptor closed, a
// private working directory, and last the seccomp deny-list (envd_seccomp.h). The layers around the whole pool (bubblewrap
// namespaces, the unprivileged uid, cgroups) are set up before the zygote starts (envd_main.cpp,
// envsandbox/isolation.cpp).
#pragma once
#include <sys/types.h>

#include <cstdint>
#include <string>

namespace spade::envsandbox::envd {

struct ChildLimits;
struct ChildSetup;
struct SeccompFilter;

/// Reads a "<Key>:  N kB" line of /proc/self/status (e.g. "VmSize", "Threads"); -1 if absent.
/// Values in kB are returned in bytes; unit-less values as they are.
int64_t proc_status_value(const char* key);

/// Applies the confinement. `sock` becomes fd 3 (the return value). `filter`: the seccomp filter to
/// load last, or nullptr for none. On any failure the process exits with status 70 (it must never run
/// a program unconfined).
int confine_child(int sock, const ChildSetup& setup, const ChildLimits& limits, SeccompFilter* filter);

}  // namespace spade::envsandbox::envd
