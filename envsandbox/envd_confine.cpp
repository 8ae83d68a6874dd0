#include "envsandbox/envd_confine.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "envsandbox/envd_child.h"
#include "envsandbox/envd_namespaces.h"
#include "envsandbox/envd_seccomp.h"

namespace spade::envsandbox::envd {
namespace {

constexpr int kConfineFailed = 70;

[[noreturn]] void fail(const char* what) {
  // stderr still reaches the host's stderr only until it is redirected; after that this is silent.
  std::fprintf(stderr, "spade-envd child: %s: %s\n", what, std::strerror(errno));
  _exit(kConfineFailed);
}

}  // namespace

int64_t proc_status_value(const char* key) {
  FILE* f = std::fopen("/proc/self/status", "re");
  if (f == nullptr) return -1;
  char line[256];
  size_t klen = std::strlen(key);
  int64_t value = -1;
  while (std::fgets(line, sizeof(line), f) != nullptr) {
    if (std::strncmp(line, key, klen) != 0 || line[klen] != ':') continue;
    long long v = 0;
    char unit[8] = {0};
    int n = std::sscanf(line + klen + 1, "%lld %7s", &v, unit);
    if (n >= 1) value = (n == 2 && std::strcmp(unit, "kB") == 0) ? v * 1024 : v;
    break;
  }
  std::fclose(f);
  return value;
}

int confine_child(int sock, const ChildSetup& setup, const ChildLimits& limits, SeccompFilter* filter) {
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);  // the zygote blocks SIGCHLD for its signalfd
  signal(SIGCHLD, SIG_DFL);
  signal(SIGXFSZ, SIG_IGN);  // over RLIMIT_FSIZE a write fails with EFBIG instead of killing us

  if (setsid() < 0) fail("setsid");
  if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) fail("PR_SET_PDEATHSIG");
  // The zygote died before PDEATHSIG was armed. (With own namespaces the parent is outside, getppid()
  // is 0, and the zygote's death ends its whole pid namespace, this one included.)
  if (!setup.own_namespaces && getppid() != setup.zygote_pid) _exit(kConfineFailed);

  // Own mount and IPC namespaces, /tmp, /dev/shm and /proc; then no capability is left.
  if (setup.own_namespaces) {
    const char* what = "";
    int err = enter_child_namespaces(limits.tmpfs_bytes, &what);
    if (err != 0) {
      errno = err;
      fail(what);
    }
  }
  if (int err = drop_capabilities(); err != 0) {
    errno = err;
    fail("capset");
  }

  // Descriptors: the channel on 3, /dev/null on 0-2 (printing cannot reach the channel), nothing else.
  if (sock != 3) {
    if (dup2(sock, 3) < 0) fail("dup2 channel");
    close(sock);
  }
  int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
  if (devnull < 0) fail("open /dev/null");
  for (int fd = 0; fd <= 2; ++fd)
    if (dup2(devnull, fd) < 0) fail("dup2 /dev/null");
  if (devnull > 3) close(devnull);
  closefrom(4);
  int flags = fcntl(3, F_GETFD);
  if (flags < 0 || fcntl(3, F_SETFD, flags | FD_CLOEXEC) < 0) fail("fcntl channel");

  // The zygote is non-dumpable, so its /proc files (oom_score_adj included) belong to root: become
  // dumpable for the write, then non-dumpable for good, so that another environment under the same
  // uid can neither ptrace us nor open /proc/PID/mem or /proc/PID/fd/N
  // (tests/sandbox_adversarial/neighbour_channel.py). Nothing but this code runs in the child yet.
  if (prctl(PR_SET_DUMPABLE, 1) != 0) fail("PR_SET_DUMPABLE 1");
  int oom = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
  if (oom >= 0) {  // best effort: the kernel OOM killer picks environments before anything else
    (void)!write(oom, "1000", 4);
    close(oom);
  }
  if (prctl(PR_SET_DUMPABLE, 0) != 0) fail("PR_SET_DUMPABLE 0");

  // Every limit exactly as the zygote computed it (RLIMIT_AS relative to the zygote's size: an absolute
  // value below the forked zygote's size makes every mmap fail, sandbox anchors, LiveBench), so
  // that the zygote can check a waiting spare against it (envd_state.h).
  for (int r = 0; r < RLIM_NLIMITS; ++r)
    if (setrlimit(static_cast<__rlimit_resource_t>(r), &setup.limits[r]) != 0) fail("setrlimit");

  umask(077);
  if (chdir(setup.own_namespaces ? kChildWorkDir : setup.workdir.c_str()) != 0) fail("chdir");
  if (filter != nullptr) {
    int err = load_seccomp_filter(*filter, getpid());
    if (err != 0) {
      errno = err;
      fail("seccomp");
    }
  }
  return 3;
}

}  // namespace spade::envsandbox::envd
