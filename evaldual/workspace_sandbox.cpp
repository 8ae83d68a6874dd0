#include "evaldual/workspace_sandbox.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "common/error.h"
#include "common/strings.h"
#include "evaldual/process.h"

namespace fs = std::filesystem;

namespace spade::evaldual {
namespace {

std::string find_bwrap(const std::string& configured) {
  if (!configured.empty()) return access(configured.c_str(), X_OK) == 0 ? configured : "";
  if (access("/usr/bin/bwrap", X_OK) == 0) return "/usr/bin/bwrap";
  const char* path = std::getenv("PATH");
  if (path)
    for (const auto& d : split(path, ':'))
      if (!d.empty() && access((d + "/bwrap").c_str(), X_OK) == 0) return d + "/bwrap";
  return "";
}

// This process's cgroup v1 directory for `controller` ("" when absent).
std::string own_cgroup_dir(const std::string& controller) {
  std::ifstream f("/proc/self/cgroup");
  std::string line;
  while (std::getline(f, line)) {
    auto parts = split(line, ':');
    if (parts.size() < 3) continue;
    for (const auto& c : split(parts[1], ','))
      if (c == controller) {
        std::string dir = "/sys/fs/cgroup/" + controller + parts[2];
        return fs::is_directory(dir) ? dir : "";
      }
  }
  return "";
}

bool write_text(const std::string& path, const std::string& text) {
  std::ofstream f(path);
  if (!f) return false;
  f << text;
  f.flush();
  return static_cast<bool>(f);
}

std::vector<int> cgroup_pids(const std::string& dir) {
  std::vector<int> pids;
  std::ifstream f(dir + "/cgroup.procs");
  int p;
  while (f >> p) pids.push_back(p);
  return pids;
}

// A cgroup v1 directory created for one command and removed (after killing its tasks) at scope end.
class CommandCgroup {
 public:
  CommandCgroup(const std::string& controller, const std::vector<std::pair<std::string, std::string>>& settings) {
    static std::atomic<int> counter{0};
    std::string base = own_cgroup_dir(controller);
    if (base.empty() || access(base.c_str(), W_OK) != 0) return;
    std::string dir = base + "/spade-duel-" + std::to_string(getpid()) + "-" + std::to_string(counter++);
    if (mkdir(dir.c_str(), 0755) != 0) return;
    for (const auto& [file, value] : settings) {
      if (!fs::exists(dir + "/" + file)) continue;  // memsw files are absent without swap accounting
      if (!write_text(dir + "/" + file, value)) {
        rmdir(dir.c_str());
        return;
      }
    }
    dir_ = dir;
  }
  ~CommandCgroup() {
    if (dir_.empty()) return;
    kill_all();
    for (int i = 0; i < 200 && rmdir(dir_.c_str()) != 0; ++i) {
      kill_all();
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  // SIGKILLs every task until the group is empty (2 s at most); returns how many were killed.
  int kill_all() {
    if (dir_.empty()) return 0;
    int killed = 0;
    for (int round = 0; round < 200; ++round) {
      auto pids = cgroup_pids(dir_);
      if (pids.empty()) break;
      for (int p : pids)
        if (kill(p, SIGKILL) == 0 && round == 0) ++killed;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return killed;
  }
  bool ok() const { return !dir_.empty(); }
  std::string procs() const { return dir_.empty() ? "" : dir_ + "/cgroup.procs"; }
  int64_t oom_kills() const {
    std::ifstream f(dir_ + "/memory.oom_control");
    std::string k;
    int64_t v;
    while (f >> k >> v)
      if (k == "oom_kill") return v;
    return 0;
  }

 private:
  std::string dir_;
};

// The /etc entries compilers, interpreters and build tools read. The versioned ones are found by
// name, not listed: Debian 12 has /etc/python3.11 and /etc/java-17-openjdk, Debian 13 /etc/python3.13
// and /etc/java-21-openjdk (a JVM without its conf/security/java.security, a link into
// /etc/java-N-openjdk, dies with "Error loading java.security file"; found by check_torch2.sh).
std::vector<std::string> toolchain_etc_paths() {
  std::vector<std::string> out = {"/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/alternatives",
                                  "/etc/localtime", "/etc/python3", "/etc/maven", "/etc/ssl/certs", "/etc/mime.types"};
  std::error_code ec;
  std::vector<std::string> versioned;
  for (const fs::directory_entry& e : fs::directory_iterator("/etc", ec)) {
    const std::string name = e.path().filename().string();
    const bool python = name.rfind("python3.", 0) == 0;
    const bool jvm = name.rfind("java-", 0) == 0 && name.size() > 13 && name.compare(name.size() - 8, 8, "-openjdk") == 0;
    if (python || jvm) versioned.push_back(e.path().string());
  }
  std::sort(versioned.begin(), versioned.end());  // a stable argv
  out.insert(out.end(), versioned.begin(), versioned.end());
  return out;
}

std::vector<std::string> bwrap_argv(const std::string& bwrap, const std::string& workspace, const SandboxOptions& o,
                                    const SandboxLimits& l) {
  std::vector<std::string> a = {bwrap, "--unshare-user", "--unshare-ipc", "--unshare-pid", "--unshare-net",
                                "--unshare-uts", "--unshare-cgroup-try", "--disable-userns", "--die-with-parent",
                                "--new-session", "--cap-drop", "ALL", "--hostname", "spade-duel",
                                "--ro-bind", "/usr", "/usr"};
  for (const char* top : {"/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"}) {
    struct stat st{};
    if (lstat(top, &st) != 0) continue;
    if (S_ISLNK(st.st_mode)) {
      char target[4096];
      ssize_t n = readlink(top, target, sizeof(target) - 1);
      if (n > 0) a.insert(a.end(), {"--symlink", std::string(target, static_cast<size_t>(n)), top});
    } else if (S_ISDIR(st.st_mode)) {
      a.insert(a.end(), {"--ro-bind", top, top});
    }
  }
  // What compilers, interpreters and build tools read from /etc; not the host's secrets.
  for (const std::string& etc : toolchain_etc_paths())
    a.insert(a.end(), {"--ro-bind-try", etc, etc});
  for (const auto& b : o.ro_binds) a.insert(a.end(), {"--ro-bind", b, b});
  a.insert(a.end(), {"--proc", "/proc", "--dev", "/dev", "--size", std::to_string(l.tmpfs_bytes), "--tmpfs", "/tmp",
                     "--bind", workspace, o.mount_point, "--chdir", o.mount_point, "--clearenv",
                     "--setenv", "PATH", "/usr/local/bin:/usr/bin:/bin", "--setenv", "HOME", "/tmp",
                     "--setenv", "TMPDIR", "/tmp", "--setenv", "LANG", "C.UTF-8", "--setenv", "USER", "root",
                     "--setenv", "LOGNAME", "root", "--setenv", "PYTHONDONTWRITEBYTECODE", "1"});
  for (const auto& [k, v] : o.env) a.insert(a.end(), {"--setenv", k, v});
  return a;
}

}  // namespace

WorkspaceSandbox::WorkspaceSandbox(std::string workspace, SandboxOptions options)
    : workspace_(std::move(workspace)), options_(std::move(options)) {
  if (!fs::is_directory(workspace_)) throw Error("sandbox: workspace '" + workspace_ + "' is not a directory");
  workspace_ = fs::canonical(workspace_).string();
  if (options_.mount_point.empty() || options_.mount_point[0] != '/')
    throw Error("sandbox: mount_point '" + options_.mount_point + "' must be an absolute path");
}

CommandResult WorkspaceSandbox::run(const std::string& command) const { return run(command, options_.limits); }

CommandResult WorkspaceSandbox::run(const std::string& command, const SandboxLimits& l) const {
  std::string bwrap = find_bwrap(options_.bwrap_path);
  if (bwrap.empty())
    throw Error("sandbox: bubblewrap not found (" +
                (options_.bwrap_path.empty() ? std::string("/usr/bin/bwrap, $PATH") : options_.bwrap_path) +
                "); install the Debian package bubblewrap (scripts/setup.sh)");
  std::string mem = std::to_string(l.memory_bytes);
  CommandCgroup pids_cg("pids", {{"pids.max", std::to_string(l.max_processes)}});
  CommandCgroup mem_cg("memory", {{"memory.limit_in_bytes", mem}, {"memory.memsw.limit_in_bytes", mem}});
  int64_t cpu = l.cpu_seconds > 0 ? l.cpu_seconds : static_cast<int64_t>(std::ceil(l.timeout_s)) + 5;
  // The launcher joins the cgroups, sets the rlimits, then becomes bwrap (exec: same pid and group).
  std::ostringstream launcher;
  launcher << "for f in \"$1\" \"$2\"; do if [ -n \"$f\" ]; then echo $$ > \"$f\" || exit 125; fi; done; shift 2; "
           << "ulimit -c 0; ulimit -t " << cpu << "; ulimit -f " << (l.file_size_bytes / 512) << "; ";
  if (!mem_cg.ok()) launcher << "ulimit -v " << (l.memory_bytes / 1024) << "; ";
  launcher << "exec \"$@\"";
  std::vector<std::string> argv = {"/bin/sh", "-c", launcher.str(), "spade-duel-launch", pids_cg.procs(), mem_cg.procs()};
  for (auto& a : bwrap_argv(bwrap, workspace_, options_, l)) argv.push_back(std::move(a));
  argv.insert(argv.end(), {"/bin/sh", "-c", command});

  ProcessOptions po;
  po.timeout_s = l.timeout_s;
  po.output_cap_bytes = l.output_cap_bytes;
  ProcessResult pr = run_process(argv, po);
  CommandResult r;
  r.rc = pr.rc;
  r.timed_out = pr.timed_out;
  r.output = std::move(pr.output);
  r.output_truncated = pr.output_truncated;
  r.seconds = pr.seconds;
  r.leftover_killed = pids_cg.kill_all() + mem_cg.kill_all();
  r.oom_killed = mem_cg.ok() && mem_cg.oom_kills() > 0;
  if (r.rc == 125 && starts_with(r.output, "bwrap:") )
    throw Error("sandbox: bwrap failed to start: " + trim(r.output));
  if (r.rc == 1 && starts_with(r.output, "bwrap: "))
    throw Error("sandbox: bwrap failed to start: " + trim(r.output));
  return r;
}

SandboxInfo WorkspaceSandbox::probe() {
  SandboxInfo info;
  info.bwrap_path = find_bwrap("");
  std::string tmp = (fs::temp_directory_path() / ("spade-duel-probe-" + std::to_string(getpid()))).string();
  fs::create_directories(tmp);
  try {
    WorkspaceSandbox sb(tmp);
    SandboxLimits l;
    l.timeout_s = 20;
    CommandResult r = sb.run("true", l);
    info.bwrap = r.rc == 0;
    if (!info.bwrap) info.detail = "bwrap probe exited " + std::to_string(r.rc) + ": " + r.output;
  } catch (const Error& e) {
    info.detail = e.what();
  }
  fs::remove_all(tmp);
  {
    CommandCgroup p("pids", {{"pids.max", "8"}});
    info.pids_cgroup = p.ok();
  }
  {
    CommandCgroup m("memory", {{"memory.limit_in_bytes", std::to_string(64 << 20)}});
    info.memory_cgroup = m.ok();
  }
  if (!info.pids_cgroup) info.detail += (info.detail.empty() ? "" : "; ") + std::string("no writable pids cgroup (fork bombs are stopped only by the deadline)");
  if (!info.memory_cgroup) info.detail += (info.detail.empty() ? "" : "; ") + std::string("no writable memory cgroup (RLIMIT_AS used instead)");
  return info;
}

}  // namespace spade::evaldual
