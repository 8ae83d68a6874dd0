// spade-envd: the seccomp deny-list every environment child loads before running program code.
// Compiled once in the zygote with libseccomp (building a filter costs ~0.7 ms, sandbox-anchors.md);
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

/// Builds the filter (call once, in the zygote, before forking). Never throws: on failure returns a
/// filter with ok() false and `error` set.
SeccompFilter build_seccomp_filter();

/// In a child: sets PR_SET_NO_NEW_PRIVS, writes `self` (the caller's pid as it sees it) into the
/// filter's pid slots and loads it for the calling thread. Returns 0 or an errno value.
int load_seccomp_filter(SeccompFilter& filter, pid_t self);

}  // namespace spade::envsandbox::envd
