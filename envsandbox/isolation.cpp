#include "envsandbox/isolation.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include "common/error.h"

namespace spade::envsandbox {

nlohmann::json IsolationInfo::to_json() const {
  return {{"namespaces", namespaces},   {"fallback_reason", fallback_reason}, {"bwrap_path", bwrap_path},
          {"child_namespaces", child_namespaces}, {"child_namespaces_reason", child_namespaces_reason},
          {"seccomp", seccomp},         {"uid", uid},                         {"gid", gid},
          {"host_uid", host_uid},       {"cgroup_memory_dir", cgroup_memory_dir},
          {"cgroup_pids_dir", cgroup_pids_dir}, {"cgroup_note", cgroup_note},
          {"pool_memory_bytes", pool_memory_bytes}, {"pool_max_tasks", pool_max_tasks}};
}

namespace detail {
namespace {

bool write_text(const std::string& path, const std::string& text) {
  int fd = open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  bool ok = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  close(fd);
  return ok;
}

int64_t read_int(const std::string& path) {
  std::ifstream f(path);
  long long v = -1;
  if (!(f >> v)) return -1;
  return v;
}

// This process's cgroup path in a v1 hierarchy whose controller list contains `controller`.
std::string own_cgroup(const std::string& controller) {
  std::ifstream f("/proc/self/cgroup");
  std::string line;
  while (std::getline(f, line)) {
    size_t a = line.find(':'), b = line.find(':', a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    std::stringstream list(line.substr(a + 1, b - a - 1));
    std::string c;
    while (std::getline(list, c, ','))
      if (c == controller) return line.substr(b + 1);
  }
  return "";
}

// Removes pool cgroups that hosts killed without cleaning up (kill -9) left in `parent`: directories
// "spade-envd-<pid>-..." whose <pid> is not running here and that are over a minute old. rmdir refuses
// a cgroup that still holds a process, so a pool in use is never removed; the age guard keeps the
// empty-for-a-moment pool of a live host in another pid namespace (whose pid we cannot see) safe
// while it starts its zygote.
void remove_stale_cgroups(const std::string& parent) {
  DIR* dir = opendir(parent.c_str());
  if (dir == nullptr) return;
  const std::string prefix = "spade-envd-";
  while (dirent* e = readdir(dir)) {
    std::string name = e->d_name;
    if (name.rfind(prefix, 0) != 0) continue;
    pid_t pid = static_cast<pid_t>(std::atol(name.c_str() + prefix.size()));
    if (pid <= 0 || pid == getpid() || kill(pid, 0) == 0 || errno == EPERM) continue;  // owner alive
    struct stat st{};
    std::string path = parent + "/" + name;
    if (stat(path.c_str(), &st) != 0 || time(nullptr) - st.st_mtime < 60) continue;
    rmdir(path.c_str());
  }
  closedir(dir);
}

// Creates <mount>/<own path>/<name> (falling back to <mount>/<name>); "" with `*why` on failure.
std::string make_cgroup_dir(const std::string& controller, const std::string& name, std::string* why) {
  std::string mount = "/sys/fs/cgroup/" + controller;
  struct stat st{};
  if (stat((mount + "/cgroup.procs").c_str(), &st) != 0) {
    *why = "no cgroup v1 " + controller + " hierarchy at " + mount;
    return "";
  }
  std::string own = own_cgroup(controller);
  for (const std::string& parent : {mount + (own == "/" ? "" : own), mount}) {
    remove_stale_cgroups(parent);
    std::string dir = parent + "/" + name;
    if (mkdir(dir.c_str(), 0755) == 0) return dir;
    *why = "cannot create " + dir + ": " + std::strerror(errno);
  }
  return "";
}

std::string find_bwrap(const std::string& configured) {
  if (!configured.empty()) return configured;
  if (access("/usr/bin/bwrap", X_OK) == 0) return "/usr/bin/bwrap";
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "");
  std::string d;
  while (std::getline(dirs, d, ':'))
    if (!d.empty() && access((d + "/bwrap").c_str(), X_OK) == 0) return d + "/bwrap";
  return "";
}

std::string dirname_of(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos || slash == 0 ? "/" : path.substr(0, slash);
}

std::string real_path(const std::string& path) {
  char buf[PATH_MAX];
  return realpath(path.c_str(), buf) ? std::string(buf) : path;
}

bool under(const std::string& path, const std::string& dir) {
  return path.size() > dir.size() && path.compare(0, dir.size(), dir) == 0 && path[dir.size()] == '/';
}

// The bwrap arguments (without the program): see isolation.h.
std::vector<std::string> bwrap_args(const std::string& bwrap, const SandboxOptions& o, const std::string& envd) {
  // CAP_SYS_ADMIN in the sandbox's own user namespace only (which owns nothing outside it): the zygote
  // needs it to give each child its own pid, IPC and mount namespaces (envd_namespaces.h); children
  // drop every capability before any program code runs.
  std::vector<std::string> a = {bwrap, "--unshare-user", "--unshare-ipc", "--unshare-pid", "--unshare-net",
                                "--unshare-uts", "--unshare-cgroup-try", "--disable-userns", "--as-pid-1",
                                "--die-with-parent", "--new-session", "--cap-drop", "ALL", "--cap-add",
                                "CAP_SYS_ADMIN", "--hostname", "spade-envd", "--ro-bind", "/usr", "/usr"};
  for (const char* top : {"/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"}) {
    struct stat st{};
    if (lstat(top, &st) != 0) continue;
    if (S_ISLNK(st.st_mode)) {
      char target[PATH_MAX];
      ssize_t n = readlink(top, target, sizeof(target) - 1);
      if (n <= 0) continue;
      a.insert(a.end(), {"--symlink", std::string(target, static_cast<size_t>(n)), top});
    } else if (S_ISDIR(st.st_mode)) {
      a.insert(a.end(), {"--ro-bind", top, top});
    }
  }
  // The few /etc entries the dynamic loader and Python read (not passwd, not the host's secrets).
  for (const char* etc : {"/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/alternatives",
                          "/etc/localtime", "/etc/python3", "/etc/python3.11", "/etc/python3.12"})
    a.insert(a.end(), {"--ro-bind-try", etc, etc});
  std::vector<std::string> binds = o.extra_ro_binds;
  std::string envd_real = real_path(envd);
  if (!under(envd_real, "/usr")) binds.push_back(envd_real);
  if (envd_real != envd && !under(envd, "/usr")) binds.push_back(envd);
#ifdef SPADE_PYTHON_EXECUTABLE
  std::string prefix = dirname_of(dirname_of(real_path(SPADE_PYTHON_EXECUTABLE)));
  if (prefix != "/usr" && prefix != "/") binds.push_back(prefix);
#endif
  a.insert(a.end(), {"--proc", "/proc"});
  // /dev: read-only, the usual character devices only (no pts, no ptmx), and an empty /dev/shm on which
  // each child binds its own (envd_namespaces.h; without per-child namespaces it stays read-only).
  a.insert(a.end(), {"--tmpfs", "/dev"});
  for (const char* dev : {"null", "zero", "full", "random", "urandom", "tty"})
    a.insert(a.end(), {"--dev-bind-try", std::string("/dev/") + dev, std::string("/dev/") + dev});
  a.insert(a.end(), {"--symlink", "/proc/self/fd", "/dev/fd", "--symlink", "/proc/self/fd/0", "/dev/stdin",
                     "--symlink", "/proc/self/fd/1", "/dev/stdout", "--symlink", "/proc/self/fd/2", "/dev/stderr",
                     "--dir", "/dev/shm", "--remount-ro", "/dev"});
  a.insert(a.end(), {"--size", std::to_string(o.tmpfs_bytes), "--tmpfs", "/tmp"});
  // The binds come after the tmpfs: bwrap mounts in order, so a build tree under /tmp (a checkout in
  // /tmp/x) stays visible on top of the empty /tmp instead of being hidden by it.
  for (const std::string& b : binds) a.insert(a.end(), {"--ro-bind", b, b});
  // Last, the root itself read-only: nothing is writable but /tmp (each child's own, or the pool's).
  a.insert(a.end(), {"--remount-ro", "/", "--chdir", "/tmp", "--clearenv", "--setenv", "PATH", "/usr/bin:/bin",
                     "--setenv", "LANG", "C.UTF-8", "--setenv", "TMPDIR", "/tmp", "--setenv", "HOME", "/tmp"});
  return a;
}

// Runs argv (no stdin; stderr captured, capped) with a deadline; returns the exit status or -1, and
// bwrap's message in `*err`.
int run_probe(const std::vector<std::string>& argv, double timeout_s, std::string* err) {
  int pipefd[2];
  if (pipe2(pipefd, O_CLOEXEC) != 0) {
    *err = std::string("pipe: ") + std::strerror(errno);
    return -1;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, pipefd[1], 2);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &all);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  std::vector<std::string> copy = argv;
  std::vector<char*> args;
  for (std::string& s : copy) args.push_back(s.data());
  args.push_back(nullptr);
  char env0[] = "PATH=/usr/bin:/bin";
  char* envp[] = {env0, nullptr};
  pid_t pid = -1;
  int rc = posix_spawn(&pid, args[0], &actions, &attr, args.data(), envp);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  close(pipefd[1]);
  if (rc != 0) {
    close(pipefd[0]);
    *err = "cannot execute " + argv[0] + ": " + std::strerror(rc);
    return -1;
  }
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  char buf[4096];
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    pollfd p{pipefd[0], POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(left.count())) <= 0) break;
    ssize_t n = read(pipefd[0], buf, sizeof(buf));
    if (n <= 0) break;
    if (err->size() < 2000) err->append(buf, static_cast<size_t>(n));
  }
  close(pipefd[0]);
  int status = 0;
  for (int i = 0; i < 200; ++i) {  // the pipe closed: the probe is exiting
    if (waitpid(pid, &status, WNOHANG) == pid) {
      while (!err->empty() && (err->back() == '\n' || err->back() == ' ')) err->pop_back();
      return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  kill(pid, SIGKILL);
  waitpid(pid, &status, 0);
  *err = "probe did not finish within " + std::to_string(timeout_s) + " s";
  return -1;
}

std::mutex g_probe_mu;
std::map<std::string, std::string> g_probe_results;  // command line -> "" (works) or the failure
std::set<std::string> g_warned;

}  // namespace

void warn_once(const std::string& key, const std::string& message) {
  std::lock_guard<std::mutex> lock(g_probe_mu);
  if (!g_warned.insert(key).second) return;
  std::fprintf(stderr, "%s\n", message.c_str());
  std::fflush(stderr);
}

std::shared_ptr<PoolCgroup> PoolCgroup::create(int64_t memory_bytes, int64_t max_tasks, std::string* why) {
  static std::atomic<int> counter{0};
  // Unique even against a stale directory of a dead host that had our pid (or a host with the same
  // pid in another pid namespace): pid, a per-process counter and 32 random bits.
  std::string name = "spade-envd-" + std::to_string(getpid()) + "-" + std::to_string(counter++) + "-" +
                     std::to_string(std::random_device{}());
  auto cg = std::shared_ptr<PoolCgroup>(new PoolCgroup());
  cg->memory_dir_ = make_cgroup_dir("memory", name, why);
  if (cg->memory_dir_.empty()) return nullptr;
  cg->pids_dir_ = make_cgroup_dir("pids", name, why);
  if (cg->pids_dir_.empty()) return nullptr;  // the destructor removes the memory directory
  bool ok = write_text(cg->memory_dir_ + "/memory.limit_in_bytes", std::to_string(memory_bytes));
  write_text(cg->memory_dir_ + "/memory.memsw.limit_in_bytes", std::to_string(memory_bytes));  // may be absent
  ok = ok && write_text(cg->pids_dir_ + "/pids.max", std::to_string(max_tasks));
  if (!ok) {
    *why = "cannot write the limits in " + cg->memory_dir_ + " / " + cg->pids_dir_;
    return nullptr;
  }
  return cg;
}

PoolCgroup::~PoolCgroup() {
  for (const std::string& dir : {memory_dir_, pids_dir_}) {
    if (dir.empty()) continue;
    for (int i = 0; i < 200 && rmdir(dir.c_str()) != 0 && errno == EBUSY; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

std::vector<std::string> PoolCgroup::procs_files() const {
  return {memory_dir_ + "/cgroup.procs", pids_dir_ + "/cgroup.procs"};
}

int64_t PoolCgroup::oom_kills() const {
  std::ifstream f(memory_dir_ + "/memory.oom_control");
  std::string key;
  long long v;
  while (f >> key >> v)
    if (key == "oom_kill") return v;
  return -1;
}

int64_t PoolCgroup::peak_memory_bytes() const { return read_int(memory_dir_ + "/memory.max_usage_in_bytes"); }
int64_t PoolCgroup::memory_bytes() const { return read_int(memory_dir_ + "/memory.usage_in_bytes"); }

std::vector<int> PoolCgroup::pids() const {
  std::vector<int> out;
  std::ifstream f(pids_dir_ + "/cgroup.procs");
  int pid;
  while (f >> pid) out.push_back(pid);
  return out;
}

LaunchPlan plan_launch(const SandboxOptions& o, const std::string& envd_path, const PoolCgroup* cgroup) {
  LaunchPlan plan;
  IsolationInfo& info = plan.info;
  std::vector<std::string> launcher = {envd_path, "--launch"};
  if (cgroup != nullptr) {
    for (const std::string& f : cgroup->procs_files()) launcher.insert(launcher.end(), {"--cgroup", f});
    info.cgroup_memory_dir = cgroup->memory_dir();
    info.cgroup_pids_dir = cgroup->pids_dir();
  }
  bool drop = o.drop_privileges && geteuid() == 0;
  if (drop)
    launcher.insert(launcher.end(), {"--uid", std::to_string(o.sandbox_uid), "--gid", std::to_string(o.sandbox_gid)});
  info.host_uid = drop ? o.sandbox_uid : static_cast<int64_t>(geteuid());
  launcher.push_back("--");

  std::vector<std::string> inner;  // what the launcher execs, minus the final program
  if (o.namespaces == "off") {
    info.fallback_reason = "disabled by SandboxOptions::namespaces = \"off\"";
  } else {
    std::string bwrap = find_bwrap(o.bwrap_path);
    std::string failure;
    std::vector<std::string> args;
    if (bwrap.empty() || access(bwrap.c_str(), X_OK) != 0) {
      failure = "bubblewrap not found" + (o.bwrap_path.empty() ? std::string(" (/usr/bin/bwrap, $PATH)")
                                                                : " at '" + o.bwrap_path + "'");
    } else {
      args = bwrap_args(bwrap, o, envd_path);
      std::vector<std::string> probe = drop ? std::vector<std::string>{envd_path, "--launch", "--uid",
                                                                       std::to_string(o.sandbox_uid), "--gid",
                                                                       std::to_string(o.sandbox_gid), "--"}
                                            : std::vector<std::string>{};
      probe.insert(probe.end(), args.begin(), args.end());
      probe.insert(probe.end(), {envd_path, "--probe"});
      std::string key;
      for (const std::string& s : probe) key += s + '\0';
      std::unique_lock<std::mutex> lock(g_probe_mu);
      auto it = g_probe_results.find(key);
      if (it != g_probe_results.end()) {
        failure = it->second;
      } else {
        lock.unlock();
        std::string err;
        int rc = run_probe(probe, 10, &err);
        if (rc != 0) failure = "bwrap failed (status " + std::to_string(rc) + ")" + (err.empty() ? "" : ": " + err);
        lock.lock();
        g_probe_results[key] = failure;
      }
    }
    if (failure.empty()) {
      info.namespaces = true;
      info.bwrap_path = bwrap;
      inner = args;
    } else if (o.namespaces == "require") {
      throw Error("envsandbox: SandboxOptions::namespaces = \"require\" but bubblewrap cannot create the "
                  "sandbox namespaces: " + failure);
    } else {
      info.fallback_reason = failure;
      warn_once(failure, "spade-envd: WARNING: bubblewrap cannot create the sandbox namespaces (" + failure +
                "); environments run WITHOUT namespace isolation, with rlimits, seccomp" +
                std::string(drop ? ", an unprivileged uid" : "") + (cgroup ? " and cgroup caps" : "") +
                " only. Lost: a private network (sockets other than AF_UNIX are still denied); a private "
                "file system (host files are readable, and world-writable places such as /tmp and "
                "/dev/shm writable, per the sandbox uid); per-environment pid, IPC and mount namespaces "
                "(environments share one /tmp and can read and write each other's work dirs, see each "
                "other's pids; files they leave in /dev/shm or /tmp outlive them). Kept: seccomp denies "
                "every signal, pidfd, limit, scheduling and F_SETOWN call aimed at another process and "
                "the creation of SysV/POSIX IPC objects. Set SandboxOptions::namespaces = \"require\" "
                "to refuse to run like this.");
    }
  }
  plan.argv = launcher;
  plan.argv.insert(plan.argv.end(), inner.begin(), inner.end());
  plan.argv.push_back(envd_path);
  if (info.namespaces && o.child_namespaces) plan.argv.push_back("--child-namespaces");
  return plan;
}

}  // namespace detail
}  // namespace spade::envsandbox
