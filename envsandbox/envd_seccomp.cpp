#include "envsandbox/envd_seccomp.h"

#include <errno.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <seccomp.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstring>

namespace spade::envsandbox::envd {
namespace {

// Placeholder for "the calling process's pid" in the compiled filter; above any pid_max (2^22), so it
// never collides with a real pid, and patched by each child before loading.
constexpr uint32_t kSelfPid = 0x5EA5EA5Eu;

constexpr const char* kDenied[] = {
    "fork", "vfork", "execve", "execveat", "ptrace", "process_vm_readv", "process_vm_writev", "mount",
    "umount2", "pivot_root", "chroot", "bpf", "io_uring_setup", "io_uring_enter", "io_uring_register",
    "keyctl", "add_key", "request_key", "unshare", "setns", "perf_event_open", "userfaultfd", "pidfd_open",
    "pidfd_getfd", "open_by_handle_at", "name_to_handle_at", "kexec_load", "kexec_file_load", "init_module",
    "finit_module", "delete_module", "reboot", "swapon", "swapoff", "acct", "tkill", "fsopen", "fsmount",
    "move_mount", "open_tree", "mount_setattr", "quotactl", "syslog", "settimeofday", "clock_settime",
    "clock_adjtime", "adjtimex", "pidfd_send_signal", "process_madvise", "process_mrelease"};
// Calls on another process: allowed with pid 0 (the caller) only.
constexpr const char* kCallerOnly[] = {"prlimit64",    "sched_setaffinity", "sched_setscheduler", "sched_setparam",
                                       "sched_setattr", "migrate_pages",     "move_pages"};
// IPC objects that outlive their creator (denied without a per-child IPC namespace).
constexpr const char* kIpc[] = {"shmget", "semget", "msgget", "mq_open", "mq_unlink"};
constexpr unsigned long kFioSetOwn = 0x8901, kSiocSPgrp = 0x8902;  // <linux/sockios.h>
constexpr int kIoprioWhoProcess = 1;
// Signals may only target the caller (A0 == its own pid).
constexpr const char* kSelfOnly[] = {"kill", "tgkill", "rt_sigqueueinfo", "rt_tgsigqueueinfo"};

}  // namespace

SeccompFilter build_seccomp_filter(bool deny_ipc) {
  SeccompFilter out;
  scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
  if (ctx == nullptr) {
    out.error = "seccomp_init failed";
    return out;
  }
  const uint32_t eperm = SCMP_ACT_ERRNO(EPERM);
  int rc = 0;
  auto add = [&](const char* name, uint32_t action, unsigned count, const scmp_arg_cmp* cmp) {
    if (rc != 0) return;
    int nr = seccomp_syscall_resolve_name(name);
    if (nr == __NR_SCMP_ERROR) return;  // unknown to this libseccomp: nothing to deny
    rc = seccomp_rule_add_array(ctx, action, nr, count, cmp);
    if (rc != 0) out.error = std::string("seccomp_rule_add(") + name + "): " + std::strerror(-rc);
  };
  for (const char* name : kDenied) add(name, eperm, 0, nullptr);
  add("clone3", SCMP_ACT_ERRNO(ENOSYS), 0, nullptr);
  scmp_arg_cmp not_thread = SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_THREAD, 0);
  add("clone", eperm, 1, &not_thread);
  scmp_arg_cmp not_unix = SCMP_A0(SCMP_CMP_NE, AF_UNIX);
  add("socket", eperm, 1, &not_unix);
  add("socketpair", eperm, 1, &not_unix);
  scmp_arg_cmp tiocsti = SCMP_A1(SCMP_CMP_EQ, TIOCSTI);
  add("ioctl", eperm, 1, &tiocsti);
  scmp_arg_cmp pdeathsig = SCMP_A0(SCMP_CMP_EQ, PR_SET_PDEATHSIG);
  add("prctl", eperm, 1, &pdeathsig);
  scmp_arg_cmp not_self = SCMP_A0(SCMP_CMP_NE, kSelfPid);
  for (const char* name : kSelfOnly) add(name, eperm, 1, &not_self);
  // Rules for one call are alternatives: any that matches denies it.
  scmp_arg_cmp pid_not_zero = SCMP_A0(SCMP_CMP_NE, 0);
  for (const char* name : kCallerOnly) add(name, eperm, 1, &pid_not_zero);
  scmp_arg_cmp which_not_process = SCMP_A0(SCMP_CMP_NE, PRIO_PROCESS), who_not_zero = SCMP_A1(SCMP_CMP_NE, 0);
  add("setpriority", eperm, 1, &which_not_process);
  add("setpriority", eperm, 1, &who_not_zero);
  scmp_arg_cmp io_which_not_process = SCMP_A0(SCMP_CMP_NE, kIoprioWhoProcess);
  add("ioprio_set", eperm, 1, &io_which_not_process);
  add("ioprio_set", eperm, 1, &who_not_zero);
  for (int cmd : {F_SETOWN, F_SETOWN_EX, F_SETSIG}) {
    scmp_arg_cmp is_cmd = SCMP_A1(SCMP_CMP_EQ, static_cast<scmp_datum_t>(cmd));
    add("fcntl", eperm, 1, &is_cmd);
  }
  for (unsigned long request : {kFioSetOwn, kSiocSPgrp}) {
    scmp_arg_cmp is_request = SCMP_A1(SCMP_CMP_EQ, request);
    add("ioctl", eperm, 1, &is_request);
  }
  if (deny_ipc)
    for (const char* name : kIpc) add(name, eperm, 0, nullptr);

  if (rc == 0) {
    int fd = memfd_create("spade-seccomp", MFD_CLOEXEC);
    if (fd < 0) {
      out.error = std::string("memfd_create: ") + std::strerror(errno);
    } else {
      rc = seccomp_export_bpf(ctx, fd);
      off_t size = lseek(fd, 0, SEEK_END);
      if (rc != 0 || size <= 0 || size % sizeof(sock_filter) != 0) {
        out.error = "seccomp_export_bpf failed";
      } else {
        out.program.resize(static_cast<size_t>(size) / sizeof(sock_filter));
        if (pread(fd, out.program.data(), static_cast<size_t>(size), 0) != size) {
          out.program.clear();
          out.error = "reading the exported filter failed";
        }
      }
      close(fd);
    }
  }
  seccomp_release(ctx);
  for (size_t i = 0; i < out.program.size(); ++i)
    if (BPF_CLASS(out.program[i].code) == BPF_JMP && out.program[i].k == kSelfPid) out.self_slots.push_back(i);
  if (out.ok() && out.self_slots.empty()) {  // the signal rules would deny signalling oneself
    out.program.clear();
    out.error = "compiled filter has no pid slot to patch";
  }
  return out;
}

int load_seccomp_filter(SeccompFilter& filter, pid_t self) {
  if (!filter.ok()) return EINVAL;
  for (size_t i : filter.self_slots) filter.program[i].k = static_cast<uint32_t>(self);
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return errno;
  sock_fprog prog{static_cast<unsigned short>(filter.program.size()), filter.program.data()};
  if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) != 0) return errno;
  return 0;
}

}  // namespace spade::envsandbox::envd
