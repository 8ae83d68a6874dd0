// spade-envd: per-environment namespaces inside the bubblewrap sandbox (issue 24). Each environment
// child is the first process (pid 1) of its own pid namespace and has its own IPC and mount namespaces:
// it can name no other process (no sibling, no spare, not the zygote), its SysV/POSIX IPC objects die
// with it, and its /tmp (work dir and /dev/shm included) is its own size-capped tmpfs that no other
// child can see and that is freed when it exits. Its /proc shows its own process only.
//
// How: bwrap gives the sandbox CAP_SYS_ADMIN in its user namespace (--cap-add CAP_SYS_ADMIN; that
// namespace owns nothing outside the sandbox). The process bwrap starts (pid 1 of bwrap's pid
// namespace) calls enter_zygote_namespace(): it makes a new pid + mount namespace, forks, and the
// child (pid 1 there, owned by our user namespace) becomes the zygote and mounts its own /proc; the
// parent only waits for it. Owning its pid namespace lets the zygote go back to it after each fork
// (setns), which bwrap's namespace (owned by bwrap's outer user namespace) would not allow. Per child,
// ChildNamespaces::before_fork() makes the next fork start a new pid namespace, after_fork() returns the
// zygote to its own, and the child calls enter_child_namespaces() then drop_capabilities() before any
// program code runs (envd_confine.cpp).
//
// An environment being pid 1 of its namespace means what it means for any init: signals it sends to
// itself with the default action are ignored (faults such as SIGSEGV, and SIGKILL from outside, the CPU
// hard limit and the OOM killer still end it).
//
// Thread-safety: none needed (spade-envd is single-threaded).
#pragma once
#include <cstdint>
#include <string>

namespace spade::envsandbox::envd {

/// Called first thing in main() (before the interpreter starts) when the host asks for per-child
/// namespaces: returns "" in the new zygote process (pid 1 of a new pid namespace, its own mount
/// namespace with every mount private and a /proc of its pid namespace); the calling process stays
/// behind, waits for that zygote and exits with its status (never returns). Returns why not (nothing
/// changed; the caller goes on as a zygote without per-child namespaces) when the namespaces cannot be
/// made (no CAP_SYS_ADMIN in the user namespace, e.g. without bubblewrap).
std::string enter_zygote_namespace();

/// The zygote's handle for giving each child its own pid namespace.
class ChildNamespaces {
 public:
  /// Inactive (fork() gives ordinary children).
  ChildNamespaces() = default;
  /// Active in a zygote that entered its namespace; fails (with *why) when the namespace of a test
  /// child cannot be set up completely (tried once: fork, enter_child_namespaces, exit). Costs one fork.
  static ChildNamespaces open(int64_t tmpfs_bytes, std::string* why);
  ~ChildNamespaces();
  ChildNamespaces(ChildNamespaces&& other) noexcept;
  ChildNamespaces& operator=(ChildNamespaces&& other) noexcept;
  ChildNamespaces(const ChildNamespaces&) = delete;
  ChildNamespaces& operator=(const ChildNamespaces&) = delete;

  bool active() const { return own_pid_ns_ >= 0; }
  /// In the zygote, just before fork(): the next child starts a new pid namespace. Returns 0 or errno.
  int before_fork();
  /// In the zygote, right after fork() (whether it succeeded or not): later forks are again made in the
  /// zygote's own pid namespace. Returns 0 or errno (the zygote must then stop forking).
  int after_fork();

 private:
  int own_pid_ns_ = -1;  // the zygote's pid namespace (/proc/self/ns/pid), for setns back
};

/// In a child of an active ChildNamespaces, before any program code: new mount and IPC namespaces, a
/// tmpfs of `tmpfs_bytes` (and at most 16384 inodes) on /tmp holding the work dir /tmp/work (created
/// empty, mode 0700) and /tmp/.shm bound on /dev/shm, and /proc remounted for its own pid namespace
/// (subset=pid: its own process only). Returns 0 or an errno value with `*what` naming the step.
int enter_child_namespaces(int64_t tmpfs_bytes, const char** what);

/// Path of a child's work dir inside its own namespaces.
constexpr const char* kChildWorkDir = "/tmp/work";

/// Clears every capability of the calling process (effective, permitted, inheritable). Returns 0 or
/// errno. With no_new_privs and execve denied (envd_seccomp.h) they cannot come back.
int drop_capabilities();

}  // namespace spade::envsandbox::envd
