#include "envsandbox/envd_zygote.h"

#include <dirent.h>
#include <fcntl.h>
#include <malloc.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <poll.h>
#include <unistd.h>

#include <Python.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include "envsandbox/envd_child.h"
#include "envsandbox/envd_confine.h"
#include "envsandbox/frame.h"
#include "envsandbox/protocol.h"
#include "envsandbox/remove_tree.h"

using nlohmann::json;

namespace spade::envsandbox::envd {
namespace {

// SIGKILLs processes re-parented to the zygote (we are a child subreaper) that are not known children:
// descendants of an environment that left its process group.
void kill_orphans(pid_t self, const std::map<pid_t, bool>& known) {
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return;
  while (dirent* e = readdir(proc)) {
    pid_t pid = static_cast<pid_t>(std::atoi(e->d_name));
    if (pid <= 0 || known.count(pid)) continue;
    std::ifstream stat("/proc/" + std::string(e->d_name) + "/stat");
    std::string line;
    std::getline(stat, line);
    size_t close_paren = line.rfind(')');
    if (close_paren == std::string::npos) continue;
    char state;
    int ppid;
    if (std::sscanf(line.c_str() + close_paren + 1, " %c %d", &state, &ppid) == 2 && ppid == self)
      kill(pid, SIGKILL);
  }
  closedir(proc);
}

constexpr int64_t kVmStep = int64_t{64} << 20;

int64_t round_up(int64_t v, int64_t step) { return (v + step - 1) / step * step; }

// VmSize of the calling process in bytes (the first field of /proc/self/statm, in pages); -1 if unknown.
// Cheaper than parsing /proc/self/status: it is read before every fork.
int64_t own_vm_bytes() {
  int fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  char buf[128];
  ssize_t n = read(fd, buf, sizeof(buf) - 1);
  close(fd);
  if (n <= 0) return -1;
  buf[n] = '\0';
  return std::strtoll(buf, nullptr, 10) * static_cast<int64_t>(sysconf(_SC_PAGESIZE));
}

// Entries in `dir` other than . and .. (-1 if it cannot be read).
int entries_in(const std::string& dir) {
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return -1;
  int n = 0;
  while (dirent* e = readdir(d))
    if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0) ++n;
  closedir(d);
  return n;
}

}  // namespace

Zygote::Zygote(int control_fd, const Prelude& prelude, std::string tmp_root, ChildNamespaces namespaces,
               std::string namespaces_error)
    : control_fd_(control_fd), prelude_(prelude), tmp_root_(std::move(tmp_root)), self_(getpid()),
      namespaces_(std::move(namespaces)), namespaces_error_(std::move(namespaces_error)),
      filter_(build_seccomp_filter(/*deny_ipc=*/!namespaces_.active())) {
  std::string error = read_process_state(0, &own_state_);
  if (!error.empty()) throw std::runtime_error("reading the zygote's own limits: " + error);
  // Children's RLIMIT_AS is relative to the zygote's size, in steps, so that the small growth of the
  // zygote's heap while it serves does not give later children other limits than earlier ones.
  vm_base_ = round_up(own_vm_bytes(), kVmStep);
}

int Zygote::run() {
  sigset_t mask;
  sigemptyset(&mask);
  sigaddset(&mask, SIGCHLD);
  sigprocmask(SIG_BLOCK, &mask, nullptr);
  signal_fd_ = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
  if (signal_fd_ < 0) {
    std::fprintf(stderr, "spade-envd: signalfd: %s\n", std::strerror(errno));
    return 1;
  }
  json ready{{"op", "ready"},
             {"pid", self_},
             {"vm_bytes", proc_status_value("VmSize")},
             {"threads", proc_status_value("Threads")},
             {"numpy", prelude_.numpy},
             {"python", PY_VERSION},
             {"tmp_root", tmp_root_},
             {"seccomp", filter_.ok()},
             {"seccomp_error", filter_.error},
             {"child_namespaces", namespaces_.active()},
             {"child_namespaces_error", namespaces_error_},
             {"uid", static_cast<int64_t>(geteuid())},
             {"gid", static_cast<int64_t>(getegid())}};
  bool serving = write_frame(control_fd_, ready.dump(), no_deadline()) == FrameStatus::kOk;
  while (serving) {
    pollfd fds[2] = {{control_fd_, POLLIN, 0}, {signal_fd_, POLLIN, 0}};
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (fds[1].revents & POLLIN) {
      signalfd_siginfo info;
      while (read(signal_fd_, &info, sizeof(info)) == static_cast<ssize_t>(sizeof(info))) {
      }
      reap();
    }
    if (fds[0].revents == 0) continue;
    std::string payload;
    if (read_frame(control_fd_, protocol::kMaxRequestBytes, no_deadline(), &payload) != FrameStatus::kOk) break;
    json request = json::parse(payload, nullptr, false);
    int pass_fd = -1;
    json reply = request.is_object() ? handle(request, &pass_fd) : json{{"error", "request is not a JSON object"}};
    FrameStatus sent = write_frame(control_fd_, reply.dump(), no_deadline(), pass_fd);
    if (pass_fd >= 0) close(pass_fd);
    if (sent != FrameStatus::kOk) break;
    refill_spares();
  }
  shutdown();
  return serving ? 0 : 1;
}

json Zygote::handle(const json& request, int* pass_fd) {
  try {
    const std::string op = request.at("op").get<std::string>();
    if (op == "spawn") return spawn(request, pass_fd);
    pid_t pid = request.at("pid").get<pid_t>();
    if (op == "status") return status(pid);
    if (op == "kill") return kill_child(pid, false);
    if (op == "release") return kill_child(pid, true);
    return json{{"error", "unknown op '" + op + "'"}};
  } catch (const std::exception& e) {
    return json{{"error", std::string("bad request: ") + e.what()}};
  }
}

json Zygote::spawn(const json& request, int* pass_fd) {
  const json& limits_json = request.at("limits");
  ChildLimits limits = ChildLimits::from_json(limits_json);
  if (limits.seccomp && !filter_.ok())
    return json{{"error", "seccomp requested but the filter could not be built: " + filter_.error}};
  if (limits_json != spare_limits_) {
    drop_spares();
    spare_limits_ = limits_json;
  }
  spare_target_ = static_cast<size_t>(std::clamp(request.value("spares", 0), 0, protocol::kMaxSpares));
  // Only a request that names a preload changes the preloaded spares ("" clears them); a plain spawn
  // (validation, repair) leaves them for the next plays of the current program.
  std::string preload = request.value("preload", std::string());
  if (request.contains("preload")) {
    if (preload != preload_) {
      if (!preload_.empty()) drop_spares(&preload_);
      preload_ = preload;
    }
    preload_target_ = preload_.empty() ? 0
                                       : static_cast<size_t>(std::clamp(request.value("preload_spares", 0), 0,
                                                                        protocol::kMaxSpares));
  }
  spare_fork_failed_ = false;
  // The zygote itself as it started (limits, scheduling): what every child inherits. What cannot be
  // restored makes it ask to be replaced, as a failed fork does.
  std::string altered = restore_own_state(own_state_);
  if (!altered.empty()) {
    drop_spares();
    spare_target_ = preload_target_ = 0;
    return json{{"error", "the zygote's own state was changed and cannot be restored (" + altered + ")"},
                {"retire", true}};
  }
  reap();
  pid_t pid = -1;
  if (!preload.empty() && take_spare(preload, &pid, pass_fd)) return json{{"pid", pid}, {"loaded", true}};
  if (take_spare("", &pid, pass_fd)) return json{{"pid", pid}, {"loaded", false}};
  std::string error = fork_child(limits, &pid, pass_fd);
  if (!error.empty()) {
    spare_target_ = preload_target_ = 0;  // a zygote that cannot fork only waits to be replaced
    return json{{"error", error}, {"retire", true}};
  }
  return json{{"pid", pid}, {"loaded", false}};
}

bool Zygote::take_spare(const std::string& preload, pid_t* pid, int* fd) {
  for (auto spare = spares_.begin(); spare != spares_.end();) {
    if (spare->preload != preload) {
      ++spare;
      continue;
    }
    auto it = children_.find(spare->pid);
    bool alive = it != children_.end() && !it->second.reaped;
    if (alive && spare_problem(*spare).empty()) {
      *pid = spare->pid;
      *fd = spare->fd;
      spares_.erase(spare);
      return true;
    }
    // Died while waiting (e.g. killed by the pool's OOM killer), stopped or altered: nobody asks about
    // it, and it is never handed over.
    close(spare->fd);
    if (alive) kill_child(spare->pid, true);
    else if (it != children_.end()) children_.erase(it);
    spare = spares_.erase(spare);
  }
  return false;
}

std::string Zygote::spare_problem(const Spare& spare) {
  if (child_is_stopped(spare.pid)) return "stopped";
  const Child& child = children_.at(spare.pid);
  // (A preloaded spare has run its own program, which may have written there.)
  if (spare.preload.empty() && !child.workdir.empty() && entries_in(child.workdir) != 0)
    return "its work dir is not empty";
  // Its limits are its own only once it has confined itself, which it says with its hello (the first
  // bytes on its channel, sent before any program code runs; peeked at, never read). A spare still
  // confining itself has run nothing but the zygote's code since the fork: it has the zygote's
  // scheduling, which was checked, and is setting its limits itself.
  char first = 0;
  if (recv(spare.fd, &first, 1, MSG_PEEK | MSG_DONTWAIT) != 1) return "";
  ProcessState want = own_state_, got;
  want.limits = child.setup.limits;
  std::string error = read_process_state(spare.pid, &got);
  if (!error.empty()) return error;
  return state_difference(want, got);
}

std::string Zygote::fork_child(const ChildLimits& limits, pid_t* pid_out, int* fd_out, WarmUp warm) {
  ChildSetup setup;
  setup.own_namespaces = namespaces_.active();
  setup.zygote_pid = self_;
  vm_base_ = std::max(vm_base_, round_up(own_vm_bytes(), kVmStep));
  setup.limits = child_rlimits(own_state_.limits, limits, vm_base_);
  if (!setup.own_namespaces) {
    setup.workdir = tmp_root_ + "/env-XXXXXX";
    if (mkdtemp(setup.workdir.data()) == nullptr) return std::string("mkdtemp: ") + std::strerror(errno);
  }
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
    int e = errno;
    remove_tree(setup.workdir);
    return std::string("socketpair: ") + std::strerror(e);
  }
  int one = 1;  // the host learns the child's pid in its own pid namespace from the hello's credentials
  setsockopt(sv[0], SOL_SOCKET, SO_PASSCRED, &one, sizeof(one));
  if (int err = namespaces_.before_fork(); err != 0) {
    close(sv[0]);
    close(sv[1]);
    remove_tree(setup.workdir);
    return std::string("unshare(pid namespace): ") + std::strerror(err);
  }
  // Free heap pages back and fastbins consolidated before the fork, so the child's first allocations
  // neither walk the zygote's free lists nor copy pages that only held freed memory (a profile put ~21%
  // of the children's copy-on-write faults in glibc's malloc_consolidate / unlink_chunk).
  malloc_trim(0);
  PyOS_BeforeFork();
  pid_t pid = fork();
  if (pid == 0) {
    PyOS_AfterFork_Child();
    close(sv[0]);
    close(control_fd_);
    close(signal_fd_);
    for (const Spare& spare : spares_) close(spare.fd);  // another environment's channel
    run_child(sv[1], setup, limits, prelude_, &filter_, warm);
  }
  int fork_errno = errno;
  PyOS_AfterFork_Parent();
  int back = namespaces_.after_fork();
  close(sv[1]);
  if (pid < 0 || back != 0) {
    close(sv[0]);
    if (pid > 0) {  // forked, but later forks would land in its namespace: give it up
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
    }
    remove_tree(setup.workdir);
    return pid < 0 ? std::string("fork: ") + std::strerror(fork_errno)
                   : std::string("setns back to the zygote's pid namespace: ") + std::strerror(back);
  }
  Child& child = children_[pid];
  child.workdir = setup.workdir;
  child.setup = std::move(setup);
  *pid_out = pid;
  *fd_out = sv[0];
  return "";
}

void Zygote::refill_spares() {
  if (spare_limits_.is_null()) return;
  ChildLimits limits = ChildLimits::from_json(spare_limits_);  // checked when the spawn came in
  auto count = [&](const std::string& preload) {
    return static_cast<size_t>(std::count_if(spares_.begin(), spares_.end(),
                                             [&](const Spare& s) { return s.preload == preload; }));
  };
  size_t plain = count(""), preloaded = preload_.empty() ? 0 : count(preload_);
  while (!spare_fork_failed_ && (plain < spare_target_ || preloaded < preload_target_)) {
    pollfd pending{control_fd_, POLLIN, 0};
    if (poll(&pending, 1, 0) > 0) return;  // a request is waiting: serve it first
    Spare spare{-1, -1, plain < spare_target_ ? std::string() : preload_};
    // A preloaded spare's load of the real program takes the compiler's copy-on-write faults while it
    // waits; it warms up after it (calls, value encoding), a plain spare before its first request.
    WarmUp warm = spare.preload.empty() ? WarmUp::kBeforeFirst : WarmUp::kAfterFirst;
    if (!fork_child(limits, &spare.pid, &spare.fd, warm).empty()) {
      spare_fork_failed_ = true;  // e.g. the pool's task cap: the next request forks (and reports) itself
      return;
    }
    // The load request goes into the channel now; the spare reads it after its hello. The
    // socket buffer holds a typical program; a larger one (or a spare that stopped reading) gets 1 s.
    if (!spare.preload.empty() &&
        write_frame(spare.fd, spare.preload, deadline_after(1.0)) != FrameStatus::kOk) {
      close(spare.fd);
      kill_child(spare.pid, true);
      spare_fork_failed_ = true;
      return;
    }
    (spare.preload.empty() ? plain : preloaded) += 1;
    spares_.push_back(std::move(spare));
  }
}

void Zygote::drop_spares(const std::string* preload) {
  for (auto spare = spares_.begin(); spare != spares_.end();) {
    if (preload != nullptr && spare->preload != *preload) {
      ++spare;
      continue;
    }
    close(spare->fd);
    kill_child(spare->pid, true);
    spare = spares_.erase(spare);
  }
}

json Zygote::status(pid_t pid) {
  reap();
  auto it = children_.find(pid);
  if (it == children_.end()) return json{{"state", "unknown"}};
  if (!it->second.reaped) return json{{"state", "running"}};
  int st = it->second.wait_status;
  if (WIFEXITED(st)) return json{{"state", "exited"}, {"code", WEXITSTATUS(st)}, {"cpu_s", it->second.cpu_s}};
  if (WIFSIGNALED(st))
    return json{{"state", "signaled"}, {"signal", WTERMSIG(st)}, {"cpu_s", it->second.cpu_s}};
  return json{{"state", "unknown"}};
}

json Zygote::kill_child(pid_t pid, bool release) {
  reap();
  auto it = children_.find(pid);
  if (it == children_.end()) return json{{"done", true}};
  if (!it->second.reaped) {
    kill(-pid, SIGKILL);  // the whole session/process group (setsid in the child)
    kill(pid, SIGKILL);   // in case the child had not reached setsid yet
  }
  if (release) {
    if (it->second.reaped) children_.erase(it);
    else it->second.released = true;
  }
  return json{{"done", true}};
}

void Zygote::reap() {
  for (;;) {
    // Peek first (WNOWAIT): while the child is a zombie its pid cannot be reused, so killing its
    // process group cannot hit an unrelated process.
    siginfo_t info{};
    if (waitid(P_ALL, 0, &info, WEXITED | WNOHANG | WNOWAIT) != 0 || info.si_pid == 0) return;
    pid_t pid = info.si_pid;
    auto it = children_.find(pid);
    if (it != children_.end()) kill(-pid, SIGKILL);  // leave nothing of its process group behind
    int st = 0;
    rusage usage{};
    if (wait4(pid, &st, 0, &usage) < 0) continue;
    if (it == children_.end()) continue;  // an orphaned grandchild re-parented to us
    remove_tree(it->second.workdir);
    if (it->second.released) {
      children_.erase(it);
    } else {
      it->second.reaped = true;
      it->second.wait_status = st;
      it->second.cpu_s = static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
                         static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) * 1e-6;
    }
  }
}

void Zygote::shutdown() {
  for (const Spare& spare : spares_) close(spare.fd);
  spares_.clear();
  std::map<pid_t, bool> known;
  for (auto& [pid, child] : children_) {
    known[pid] = true;
    if (child.reaped) continue;
    kill(-pid, SIGKILL);
    kill(pid, SIGKILL);
  }
  for (auto& [pid, child] : children_) {
    if (!child.reaped) {
      int st;
      while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
      }
    }
    remove_tree(child.workdir);
  }
  children_.clear();
  // As the first process of its own pid namespace the zygote takes every process of the namespace with
  // it when it exits; otherwise orphans re-parented to it (a child subreaper) are killed here.
  if (self_ != 1) kill_orphans(self_, known);
  while (waitpid(-1, nullptr, WNOHANG) > 0) {
  }
  if (!tmp_root_.empty()) remove_tree(tmp_root_);
}

}  // namespace spade::envsandbox::envd
