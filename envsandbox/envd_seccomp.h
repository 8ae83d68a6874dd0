// spade-envd: the seccomp deny-list every environment child loads before running program code.
// Compiled once in the zygote with libseccomp (building a filter costs ~0.7 ms, sandbox anchors);
// a child only patches its own pid into the copy it inherited and loads it (microseconds).
//
// Denied with EPERM (Python sees PermissionError): fork, vfork, clone without CLONE_THREAD (threads
// stay allowed), execve, execveat, socket() of any family but AF_UNIX, ptrace, process_vm_readv/
// writev, mount, umount2, pivot_root, chroot, bpf, io_uring_setup/enter/register, keyctl, add_key,
// request_key, unshare, setns, perf_event_open, userfaultfd, pidfd_open, pidfd_getfd,
// open_by_handle_at, kexec_load, init/finit/delete_module, reboot, swapon/swapoff, acct, tkill,
// ioctl(TIOCSTI), prctl(PR_SET_PDEATHSIG), and kill/tgkill/rt_sigqueueinfo/rt_tgsigqueueinfo aimed
// at any process but the caller itself (environments run under one uid: without this one could kill
// its neighbours or the zygote). clone3 gets ENOSYS so glibc falls back to clone (whose flags a
// filter can inspect). Everything else is allowed; the filter is a deny-list, not an allow-list.
//
// Every call that acts on another process by pid, pidfd or uid is denied too (issue 24), so that even
// without per-child pid namespaces (envd_namespaces.h) no environment reaches a neighbour, a waiting
// spare or the zygote: pidfd_send_signal (a pidfd or an open /proc/PID directory), process_madvise,
// process_mrelease; prlimit64, sched_setaffinity, sched_setscheduler, sched_setparam, sched_setattr,
// migrate_pages and move_pages on any pid but 0 (the caller); setpriority and ioprio_set on anything but
// (the caller's own process, 0); fcntl F_SETOWN, F_SETOWN_EX and F_SETSIG and ioctl FIOSETOWN and
// SIOCSPGRP (which make the kernel signal the owner process on I/O). Without a per-child IPC namespace
// the IPC calls that create or open an object are denied as well (shmget, semget, msgget, mq_open,
// mq_unlink): objects would outlive the environment and be visible to the next.
#pragma once
#include <linux/filter.h>
#include <sys/types.h>

#include <string>
#include <vector>

namespace spade::envsandbox::envd {

struct SeccompFilter {
  std::vector<sock_filter> program;  // empty when building failed (see error)
  std::vector<size_t> self_slots;    // instructions whose constant is the caller's pid (patched per child)
  std::string error;                 // why building failed ("" on success)

  bool ok() const { return !program.empty(); }
};

/// Builds the filter (call once, in the zygote, before forking); `deny_ipc`: also deny creating and
/// opening SysV and POSIX IPC objects (when children have no IPC namespace of their own). Never
/// throws: on failure returns a filter with ok() false and `error` set.
SeccompFilter build_seccomp_filter(bool deny_ipc);

/// In a child: sets PR_SET_NO_NEW_PRIVS, writes `self` (the caller's pid as it sees it) into the
/// filter's pid slots and loads it for the calling thread. Returns 0 or an errno value.
int load_seccomp_filter(SeccompFilter& filter, pid_t self);

}  // namespace spade::envsandbox::envd
