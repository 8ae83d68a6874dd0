#include "envsandbox/envd_namespaces.h"

#include <fcntl.h>
#include <linux/capability.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace spade::envsandbox::envd {
namespace {

std::string failed(const char* what) { return std::string(what) + ": " + std::strerror(errno); }

// The process bwrap started, once the zygote is forked: holds nothing, waits for it, exits as it did.
[[noreturn]] void wait_for_zygote(pid_t zygote) {
  closefrom(0);
  int status = 0;
  for (;;) {
    pid_t pid = waitpid(-1, &status, 0);
    if (pid == zygote) break;
    if (pid < 0 && errno != EINTR) _exit(1);
  }
  _exit(WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
}

}  // namespace

std::string enter_zygote_namespace() {
  if (unshare(CLONE_NEWPID | CLONE_NEWNS) != 0) return failed("unshare(pid, mount)");
  // Private mounts: the children's mount namespaces are copies of this one, and nothing a child
  // mounts may propagate back here.
  if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) return failed("mount --make-rprivate /");
  pid_t zygote = fork();
  if (zygote < 0) return failed("fork");
  if (zygote > 0) wait_for_zygote(zygote);
  // The zygote: pid 1 of the new namespace. A /proc of it, so that /proc/PID means the pids fork()
  // returns (best effort: without it /proc still describes this process itself correctly).
  mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr);
  return "";
}

ChildNamespaces ChildNamespaces::open(int64_t tmpfs_bytes, std::string* why) {
  ChildNamespaces ns;
  if (getpid() != 1) {
    *why = "the zygote is not the first process of its own pid namespace";
    return ns;
  }
  ns.own_pid_ns_ = ::open("/proc/self/ns/pid", O_RDONLY | O_CLOEXEC);
  if (ns.own_pid_ns_ < 0) {
    *why = failed("open /proc/self/ns/pid");
    return ns;
  }
  // One complete trial, so that a failure shows here once instead of in every child.
  int err = ns.before_fork();
  if (err != 0) {
    *why = std::string("unshare(pid): ") + std::strerror(err);
    return ChildNamespaces();
  }
  int report[2];
  if (pipe2(report, O_CLOEXEC) != 0) {
    *why = failed("pipe");
    ns.after_fork();
    return ChildNamespaces();
  }
  pid_t pid = fork();
  int fork_errno = errno;
  if (pid == 0) {  // the trial child: says which step failed, if one did
    const char* what = "capset";
    int rc = enter_child_namespaces(tmpfs_bytes, &what);
    if (rc == 0) rc = drop_capabilities();
    if (rc != 0) {
      std::string text = std::string(what) + ": " + std::strerror(rc);
      (void)!write(report[1], text.data(), text.size());
    }
    _exit(rc == 0 ? 0 : 1);
  }
  close(report[1]);
  err = ns.after_fork();
  if (pid < 0 || err != 0) {
    close(report[0]);
    *why = pid < 0 ? std::string("fork: ") + std::strerror(fork_errno) : std::string("setns: ") + std::strerror(err);
    return ChildNamespaces();
  }
  char text[256];
  ssize_t n = read(report[0], text, sizeof(text));
  close(report[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    *why = "a trial child could not set up its namespaces: " +
           (n > 0 ? std::string(text, static_cast<size_t>(n)) : std::string("it died"));
    return ChildNamespaces();
  }
  return ns;
}

ChildNamespaces::~ChildNamespaces() {
  if (own_pid_ns_ >= 0) close(own_pid_ns_);
}

ChildNamespaces::ChildNamespaces(ChildNamespaces&& other) noexcept : own_pid_ns_(other.own_pid_ns_) {
  other.own_pid_ns_ = -1;
}

ChildNamespaces& ChildNamespaces::operator=(ChildNamespaces&& other) noexcept {
  if (this != &other) {
    if (own_pid_ns_ >= 0) close(own_pid_ns_);
    own_pid_ns_ = other.own_pid_ns_;
    other.own_pid_ns_ = -1;
  }
  return *this;
}

int ChildNamespaces::before_fork() {
  if (!active()) return 0;
  return unshare(CLONE_NEWPID) == 0 ? 0 : errno;
}

int ChildNamespaces::after_fork() {
  if (!active()) return 0;
  return setns(own_pid_ns_, CLONE_NEWPID) == 0 ? 0 : errno;
}

int enter_child_namespaces(int64_t tmpfs_bytes, const char** what) {
  auto step = [&](bool ok, const char* name) {
    if (!ok) *what = name;
    return ok;
  };
  std::string options = "size=" + std::to_string(tmpfs_bytes) + ",nr_inodes=16384,mode=0700";
  if (step(unshare(CLONE_NEWNS | CLONE_NEWIPC) == 0, "unshare(mount, ipc)") &&
      step(mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, options.c_str()) == 0, "mount tmpfs /tmp") &&
      step(mkdir(kChildWorkDir, 0700) == 0, "mkdir /tmp/work") && step(mkdir("/tmp/.shm", 0700) == 0, "mkdir /tmp/.shm") &&
      step(mount("/tmp/.shm", "/dev/shm", nullptr, MS_BIND, nullptr) == 0, "bind /tmp/.shm on /dev/shm") &&
      step(mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, "subset=pid") == 0, "mount /proc"))
    return 0;
  return errno != 0 ? errno : EINVAL;
}

int drop_capabilities() {
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = {};
  return syscall(SYS_capset, &header, data) == 0 ? 0 : errno;
}

}  // namespace spade::envsandbox::envd
